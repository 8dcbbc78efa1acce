"""Our services as subprocesses against the local stack: the fixtures the tiers share (a plugin).

Registered once by the root conftest (``pytest_plugins``), so the integration and the e2e
tier see the same fixtures:

* ``config_files``: a ``bigquery_config`` (the local stack's names, input
  ``enriched-loader``) and a resolver config, written to the test's tmp dir;
* ``start_service(module, *args)``: start ``python -m <module> …`` with the environment
  (the local stack's once ``local_stack`` set it), logging plain text to a file; whatever is
  left is killed at the end of the test. It returns a :class:`Service`;
* ``start_module_service(env)(module, *args)``: the same for services that serve every test
  of a module (killed at the module's end);
* ``eventually(check, timeout=30)``: :func:`support.timing.wait_until` under the name older
  tests use.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import pytest

from support.configs import bigquery_config, resolver_config
from support.timing import wait_until

T = TypeVar("T")

CONFIG = bigquery_config(name="plowline integration", input="enriched-loader")
RESOLVER = resolver_config(cache_size=10, cache_ttl=60)
_PLAIN_LOGS = {"PLOWLINE_DEADLETTER_LOG_JSON": "false", "PLOWLINE_REPEATER_LOG_JSON": "false"}
"""Services started by tests log plain text, so a failing test's log tail reads easily."""


@dataclass
class Service:
    """A service process started by a test, and the file its output goes to."""

    process: subprocess.Popen[bytes]
    log: Path

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60.0) -> int:
        """Send ``sig`` (unless it already exited) and return the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
        return self.process.wait(timeout)

    def tail(self) -> str:
        """Return the end of the service's log."""
        return self.log.read_text(errors="replace")[-4000:]


@pytest.fixture
def config_files(tmp_path: Path) -> tuple[Path, Path]:
    """A bigquery_config and a resolver config for the local stack."""
    config, resolver = tmp_path / "config.json", tmp_path / "resolver.json"
    config.write_text(json.dumps(CONFIG))
    resolver.write_text(json.dumps(RESOLVER))
    return config, resolver


@contextmanager
def _services(
    directory: Path, env: Mapping[str, str] | None = None
) -> Iterator[Callable[..., Service]]:
    """Start services logging under ``directory``; kill whatever is left on leaving."""
    started: list[Service] = []

    def start(module: str, *args: str) -> Service:
        log = directory / f"{module}-{len(started)}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                [sys.executable, "-m", module, *args],
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, **_PLAIN_LOGS, **(env or {})},
            )
        service = Service(process, log)
        started.append(service)
        return service

    try:
        yield start
    finally:
        for service in started:
            if service.process.poll() is None:
                service.process.kill()
                service.process.wait(10)


@pytest.fixture
def start_service(tmp_path: Path) -> Iterator[Callable[..., Service]]:
    """Start services as subprocesses; kill whatever is left at the end of the test."""
    with _services(tmp_path) as start:
        yield start


@pytest.fixture(scope="module")
def start_module_service(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Callable[[Mapping[str, str]], Callable[..., Service]]]:
    """``start_module_service(env)(module, *args)``: services that live for the whole module."""
    with ExitStack() as stack:

        def starter(env: Mapping[str, str]) -> Callable[..., Service]:
            return stack.enter_context(_services(tmp_path_factory.mktemp("services"), env))

        yield starter


def _eventually(check: Callable[[], T], timeout: float = 30.0, every: float = 0.3) -> T:
    """Wait until ``check()`` is truthy or ``timeout`` passed; return its last answer."""
    return wait_until(check, timeout, every_s=every)


@pytest.fixture(scope="session")
def eventually() -> Callable[..., object]:
    """``eventually(check, timeout=30, every=0.3)``: ``support.timing.wait_until`` by another name."""
    return _eventually
