"""``plowline-mutator listen`` as a real process on the local stack serves its probes on ``--port``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from plowline_devstack.stack.lifecycle import LocalStack
from plowline_devstack.stack.servers import free_port

EXAMPLES = Path(__file__).resolve().parents[3] / "libs/devstack/src/plowline_devstack/examples"


def _get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as reply:
            return int(reply.status), reply.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()
    except (urllib.error.URLError, OSError):
        return 0, ""


@pytest.fixture
def listening(
    local_stack: LocalStack, tmp_path: Path
) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """Start listen on the example config's types subscription; yield it and its port once ready."""
    config = json.loads((EXAMPLES / "config.json").read_text())
    config["data"]["projectId"] = local_stack.project
    config_file = tmp_path / "config.json"
    config_file.write_text(json.dumps(config))
    port = free_port()
    command = [
        str(Path(sys.executable).parent / "plowline-mutator"), "listen",
        "--config", str(config_file), "--resolver", str(EXAMPLES / "resolver.json"),
        "--port", str(port),
    ]  # fmt: skip
    log = tmp_path / "listen.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            command, env={**os.environ, **local_stack.env()}, stdout=sink, stderr=sink
        )
    try:
        deadline = time.monotonic() + 60
        while _get(port, "/readyz")[0] != 200:
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"listen did not get ready:\n{log.read_text()[-2000:]}")
            time.sleep(0.2)
        yield process, port
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        pytest.param("/healthz", '"alive":true', id="healthz"),
        pytest.param("/readyz", "ready", id="readyz"),
        pytest.param("/metrics", "plowline_mutator_types_received_total", id="metrics"),
    ],
)
def test_listen_answers_its_probes_on_its_port(
    listening: tuple[subprocess.Popen[bytes], int], path: str, expected: str
) -> None:
    """listen serves /healthz, /readyz and /metrics on --port, each 200 while the stream runs."""
    _, port = listening

    status, body = _get(port, path)

    assert (status, expected in body) == (200, True), body[:500]


def test_listen_stops_its_probes_and_exits_zero_after_sigterm(
    listening: tuple[subprocess.Popen[bytes], int],
) -> None:
    """SIGTERM stops listen with exit code 0 and releases its port."""
    process, port = listening

    process.send_signal(signal.SIGTERM)
    code = process.wait(timeout=60)

    assert (code, _get(port, "/healthz")[0]) == (0, 0)
