"""Integration fixtures: the local stack (Pub/Sub, BigQuery, Cloud Storage stand-ins) once per session.

``local_stack`` (defined in the root conftest, shared with the cluster tier) starts the three servers on free loopback ports in a temporary directory,
provisions the default config (project ``plowline-local``, dataset ``snowplow``, table
``events``, topics ``enriched``/``types``/``bad-rows``/``failed-inserts`` and their
subscriptions, buckets ``plowline-dead-end``/``plowline-bad-rows``), points the Google
clients at it through the environment for the whole session, and stops it at the end.
It yields a :class:`plowline_devstack.stack.lifecycle.LocalStack`: ``.endpoints`` (ports, URLs),
``.env()``, ``.project``, ``.dataset``, ``.table``, ``.table_ref``, ``.config.topics``,
``.config.subscriptions``, ``.config.buckets``, ``.topic_path(name)``,
``.subscription_path(name)``.

Nothing is skipped: a server that does not start fails the session with its log tail.

``config_files``, ``start_service`` and ``eventually`` serve the tests that run a service
as a real subprocess (``python -m <module> …``) against the stack; ``start_module_service``
starts services that serve every test of a module (killed at the module's end).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from support.configs import bigquery_config, resolver_config

CONFIG = bigquery_config(name="plowline integration", input="enriched-loader")
_PLAIN_LOGS = {"PLOWLINE_DEADLETTER_LOG_JSON": "false", "PLOWLINE_REPEATER_LOG_JSON": "false"}
"""Services started by tests log plain text, so a failing test's log tail reads easily."""
RESOLVER = resolver_config(cache_size=10, cache_ttl=60)


def _eventually(check: Callable[[], Any], timeout: float = 30.0, every: float = 0.3) -> Any:
    """Poll ``check`` until it returns something truthy; fail with its last answer otherwise."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result or time.monotonic() > deadline:
            return result
        time.sleep(every)


@dataclass
class Service:
    """A service started as ``python -m <module> ...`` with the local stack's environment."""

    process: subprocess.Popen[bytes]
    log: Path

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60.0) -> int:
        """Send ``sig`` and return the exit code."""
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


@pytest.fixture(scope="session")
def eventually() -> Callable[..., Any]:
    """``eventually(check, timeout)``: poll until ``check()`` is truthy, return its last answer."""
    return _eventually


@pytest.fixture(scope="session")
def google_pubsub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Google's own Pub/Sub emulator for the session, as ``host:port`` (the second opinion).

    Skipped, with how to install it, where it is absent; under CI it must be there (the
    machines have it), so there it fails instead.
    """
    from plowline_devstack.pubsub.google import HOW_TO_GET, GooglePubSubEmulator, find_launcher
    from plowline_devstack.stack.servers import free_port as any_free_port

    launcher = find_launcher()
    if launcher is None:
        if os.environ.get("CI"):
            pytest.fail(HOW_TO_GET)
        pytest.skip(HOW_TO_GET)
    log = tmp_path_factory.mktemp("google-pubsub") / "emulator.log"
    emulator = GooglePubSubEmulator(launcher, "127.0.0.1", any_free_port(), log)
    yield emulator.start()
    emulator.stop()
