"""Root test configuration: tiers by directory, test-data paths, and a network guard.

Tiers: a test under ``tests/unit`` is marked ``unit``, under ``tests/integration``
``integration``, under ``tests/e2e`` ``e2e``, under ``tests/fuzz`` ``fuzz``, under
``tests/cluster`` ``cluster``; select with ``-m``. ``local_stack`` lives here because two
tiers share it (integration, cluster): in one session the stack starts once.
The network guard refuses Python-level connections to anything but loopback, so a test
can never reach real Google Cloud by accident. ``--faults FILE`` starts the integration
tier's local stack with that fault plan (``plowline_devstack/faults/plan.py``; default none).
``PLOWLINE_TEST_BUDGET_S`` bounds a session's wall time: once it is spent, every test not yet
started fails at setup, naming the budget, so a run that goes wrong (a stack that broke and
makes every later test wait out its timeouts) ends with a full report rather than being cut
off by CI's own limit; ``.ci/run`` sets it.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, settings

# Tests start services (fork, then exec) from a process that talks gRPC: see
# plowline_devstack's docstring for why gRPC's fork handlers stay off here.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")

# Timing is a benchmark's business: on a shared 2-core machine a slow example is not a bug,
# so property tests have no per-example deadline and no "too slow" health check.
settings.register_profile("plowline", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("plowline")

if TYPE_CHECKING:
    from plowline_devstack.stack.lifecycle import LocalStack

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"
_TIERS = ("unit", "integration", "e2e", "fuzz", "cluster")


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add ``--faults FILE``: the fault plan the session's local stack starts with."""
    parser.addoption(
        "--faults",
        type=Path,
        default=None,
        metavar="FILE",
        help="start the integration tier's local stack with this fault file (TOML or JSON; "
        "see plowline_devstack/faults/plan.py); default: no faults",
    )


_BUDGET = "PLOWLINE_TEST_BUDGET_S"
_started = time.monotonic()


def pytest_sessionstart(session: pytest.Session) -> None:
    """Start the clock of ``PLOWLINE_TEST_BUDGET_S``."""
    global _started
    _started = time.monotonic()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Fail a test that would start after the session's time budget is spent."""
    budget = os.environ.get(_BUDGET, "").strip()
    if not budget:
        return
    spent = time.monotonic() - _started
    if spent >= float(budget):
        pytest.fail(
            f"not run: the session's time budget {_BUDGET}={budget} s was spent "
            f"({spent:.0f} s); the first failures above say why the run took so long",
            pytrace=False,
        )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test with the tier of the directory it lives in."""
    for item in items:
        parts = Path(str(item.fspath)).resolve().relative_to(REPO).parts
        if len(parts) > 1 and parts[0] == "tests" and parts[1] in _TIERS:
            item.add_marker(getattr(pytest.mark, parts[1]))


@pytest.fixture(scope="session")
def test_data_dir() -> Path:
    """The repository's test data (``tests/data``: conformance vectors, Iglu Central)."""
    return DATA


@pytest.fixture(scope="session")
def conformance_dir(test_data_dir: Path) -> Path:
    """Upstream Snowplow test vectors (``tests/data/conformance``, see its README)."""
    return test_data_dir / "conformance"


@pytest.fixture(scope="session")
def iglu_central_dir(test_data_dir: Path) -> Path:
    """A real Iglu registry (static layout: ``schemas/vendor/name/jsonschema/M-R-A``)."""
    return test_data_dir / "iglu-central"


def _is_loopback(address: Any) -> bool:
    if not isinstance(address, tuple) or not address:
        return True  # AF_UNIX paths and the like
    host = str(address[0])
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@pytest.fixture(autouse=True, scope="session")
def _network_guard() -> Iterator[None]:
    """Refuse Python-level connections to non-loopback addresses during tests."""
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def connect(self: socket.socket, address: Any) -> None:
        if not _is_loopback(address):
            raise ConnectionRefusedError(
                f"network guard: tests may only reach loopback, not {address!r}"
            )
        real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        if not _is_loopback(address):
            raise ConnectionRefusedError(
                f"network guard: tests may only reach loopback, not {address!r}"
            )
        return real_connect_ex(self, address)

    socket.socket.connect = connect  # type: ignore[method-assign]
    socket.socket.connect_ex = connect_ex  # type: ignore[method-assign]
    yield
    socket.socket.connect = real_connect  # type: ignore[method-assign]
    socket.socket.connect_ex = real_connect_ex  # type: ignore[method-assign]


@pytest.fixture(scope="session")
def local_stack(
    tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config
) -> Iterator[LocalStack]:
    """The local stack, started once per session with the default config (and ``--faults``)."""
    from plowline_core.errors import ConfigError
    from plowline_devstack.faults.plan import load_faults
    from plowline_devstack.stack.lifecycle import StackStartError, start_stack
    from plowline_devstack.stack.provisioning import StackConfig

    data_dir = tmp_path_factory.mktemp("local-stack")
    try:
        faults = load_faults(pytestconfig.getoption("faults"))
        stack = start_stack(data_dir, StackConfig(), faults=faults)
    except ConfigError as exc:
        pytest.fail(f"--faults: {exc}", pytrace=False)
    except StackStartError as exc:
        pytest.fail(f"the local stack did not start:\n{exc}", pytrace=False)
    try:
        with pytest.MonkeyPatch.context() as patch:
            for name, value in stack.env().items():
                patch.setenv(name, value)
            yield stack
    finally:
        stack.stop()
