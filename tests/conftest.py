"""Root test configuration: tiers by directory, test-data paths, and a network guard.

Tiers: a test is marked with the tier of its directory (``tests/<tier>``); select with
``-m``. What each tier may use (pyproject.toml's markers say it too):

* ``unit``: the code in this process and nothing else: no subprocess, no socket (server or
  client), no compiler. The unit guard below makes a test that tries fail, naming the call;
* ``tool``: runs a program (a command of ours, javac, a Python of its own) or a loopback
  server of its own, no local stack;
* ``deploy``: the manifests, Dockerfiles and alert rules through the field's tools
  (``kubectl kustomize``, ``kubernetes-validate``, checkov, promtool);
* ``integration``: at most the local stack (and local Spark); ``e2e``: the services as
  processes; ``cluster``: a Spark standalone cluster; ``fuzz``: atheris, for a bounded time.
 ``local_stack`` lives here because three
tiers share it (integration, e2e, cluster): in one session the stack starts once.
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
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, settings

# Fixtures two tiers share (integration and e2e): registered here once, since pytest takes
# ``pytest_plugins`` only from the root conftest.
pytest_plugins = [
    "support.endpoints",
    "support.hand_made",
    "support.loader_rigs",
    "support.services",
    "support.snowplow",
]

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
_TIERS = ("unit", "tool", "deploy", "integration", "e2e", "fuzz", "cluster")


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
    """Start the clock of ``PLOWLINE_TEST_BUDGET_S`` and the network guard."""
    global _started
    _started = time.monotonic()
    _guard_network()


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


class UnitTierViolation(RuntimeError):
    """A unit test reached outside its process: it belongs in another tier."""


def _refuse(what: str) -> Callable[..., Any]:
    def refuse(*_args: Any, **_kwargs: Any) -> Any:
        raise UnitTierViolation(
            f"a unit test may not {what}: move it to tests/tool (a program or a loopback "
            "server of its own) or tests/integration (the local stack), or give it a fake"
        )

    return refuse


_UNIT_REFUSED: tuple[tuple[Any, str, str], ...] = (
    (subprocess.Popen, "_execute_child", "start a subprocess"),
    (os, "fork", "fork"),
    (os, "posix_spawn", "start a process"),
    (os, "posix_spawnp", "start a process"),
    (socket.socket, "bind", "open a server socket"),
    (socket.socket, "connect", "open a connection"),
    (socket.socket, "connect_ex", "open a connection"),
)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """Run a ``unit`` test (its fixtures too) with subprocesses and sockets refused."""
    if item.get_closest_marker("unit") is None:
        yield
        return
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in _UNIT_REFUSED]
    for owner, name, what in _UNIT_REFUSED:
        setattr(owner, name, _refuse(what))
    try:
        yield
    finally:
        for owner, name, original in saved:
            setattr(owner, name, original)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test with the tier of the directory it lives in, and with no other tier.

    A tier marker written in a test file that names another tier than its folder's would
    put the test in two tiers (and under the unit guard when it runs a program): refused.
    Every test also gets its file as its xdist group unless it names a group of its own, so
    ``-n N --dist loadgroup`` keeps a file's tests (and their module fixtures) on one worker
    and spreads only what asks to be spread (e.g. chaos, a mode a test).
    """
    grouping = config.pluginmanager.hasplugin("xdist")
    for item in items:
        if grouping and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
        parts = Path(str(item.fspath)).resolve().relative_to(REPO).parts
        if len(parts) > 1 and parts[0] == "tests" and parts[1] in _TIERS:
            tier = parts[1]
            others = {mark.name for mark in item.iter_markers() if mark.name in _TIERS} - {tier}
            if others:
                raise pytest.UsageError(
                    f"{item.nodeid} lives in tests/{tier} but is marked {', '.join(others)}: "
                    f"a test's tier is its folder; move the file or drop the marker"
                )
            item.add_marker(getattr(pytest.mark, tier))


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


def _guard_network() -> None:
    """Refuse Python-level connections to non-loopback addresses for the rest of the process.

    Installed at session start (not as a fixture), so the unit guard, which swaps the same
    methods around each unit test, always saves and restores the guarded ones.
    """
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
