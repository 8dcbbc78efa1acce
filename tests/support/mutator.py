"""``plowline-mutator`` as a real process on the local stack, for the tests that run it.

``mutator_process`` writes the example config (the stack's project, any ``data`` keys
given), starts the command with ``--port`` on a free port, waits until it is ready and
kills whatever is left of it on the way out; ``http_get`` asks one of its endpoints.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from plowline_devstack.stack.lifecycle import LocalStack
from plowline_devstack.stack.servers import free_port

from support.timing import wait_until

EXAMPLES = Path(__file__).resolve().parents[2] / "libs/devstack/src/plowline_devstack/examples"
READY_WITHIN_S = 60.0


@dataclass(frozen=True)
class MutatorProcess:
    """A running ``plowline-mutator`` command: the process, its --port and its log."""

    process: subprocess.Popen[bytes]
    port: int
    log: Path

    def get(self, path: str) -> tuple[int, str]:
        """Return the status and body of GET ``path`` on its port (``http_get``)."""
        return http_get(self.port, path)

    def logged(self) -> str:
        """Return what it wrote to stdout and stderr so far."""
        return self.log.read_text()


def http_get(port: int, path: str) -> tuple[int, str]:
    """Return the status and body of GET ``path`` on 127.0.0.1:``port``; 0 when nothing answers."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as reply:
            return int(reply.status), reply.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()
    except (urllib.error.URLError, OSError):
        return 0, ""


def answers(path: str) -> Callable[[MutatorProcess], bool]:
    """Return a readiness check: GET ``path`` answers 200."""
    return lambda running: running.get(path)[0] == 200


@contextmanager
def mutator_process(
    stack: LocalStack,
    folder: Path,
    command: str,
    *flags: str,
    ready: Callable[[MutatorProcess], bool],
    **data: str,
) -> Iterator[MutatorProcess]:
    """Run ``plowline-mutator COMMAND`` on the example config until ``ready``; kill it after.

    ``data`` overrides keys of the config's ``data`` (e.g. ``typesSubscription``); the
    test fails with the log's tail when the process exits or is not ready within 60 s.
    """
    config = json.loads((EXAMPLES / "config.json").read_text())
    config["data"].update(projectId=stack.project, **data)
    config_file = folder / "config.json"
    config_file.write_text(json.dumps(config))
    port = free_port()
    argv = [
        str(Path(sys.executable).parent / "plowline-mutator"), command,
        "--config", str(config_file), "--resolver", str(EXAMPLES / "resolver.json"),
        "--port", str(port), *flags,
    ]  # fmt: skip
    log = folder / f"{command}.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            argv, env={**os.environ, **stack.env()}, stdout=sink, stderr=sink
        )
    running = MutatorProcess(process, port, log)
    try:

        def settled() -> str | None:
            if ready(running):
                return "ready"
            return "exited" if process.poll() is not None else None

        if wait_until(settled, READY_WITHIN_S) != "ready":
            pytest.fail(f"{command} did not get ready:\n{running.logged()[-2000:]}")
        yield running
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
