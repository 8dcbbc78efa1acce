"""A stand-in whose chosen port is taken before it binds is started again on new ports.

Ports are chosen free and bound a moment later by the server; another process can take one
in between (seen in CI: "Failed to bind to address" from the BigQuery stand-in's gRPC port).
Each test takes a port for real, hands it to the launcher as if it had been chosen free, and
checks that the server ends up answering elsewhere, or that other failures are not retried.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from plowline_devstack.stack import servers
from plowline_devstack.stack.alone import start_alone
from plowline_devstack.stack.lifecycle import StackStartError, start_stack
from support.timing import wait_for

pytestmark = pytest.mark.integration
PROJECT = "plowline-ports"


@pytest.fixture
def taken() -> Iterator[int]:
    """A loopback port some other process listens on."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield int(sock.getsockname()[1])


def _hand_out_first(monkeypatch: pytest.MonkeyPatch, port: int, index: int) -> list[list[int]]:
    """Make the first ``free_ports`` answer carry ``port`` at ``index``; return every answer."""
    real = servers.free_ports
    answers: list[list[int]] = []

    def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
        chosen = real(count, host)
        if not answers:
            chosen[index] = port
        answers.append(chosen)
        return chosen

    monkeypatch.setattr(servers, "free_ports", free_ports)
    return answers


def test_a_storage_server_whose_port_is_taken_exits_at_once(taken: int, tmp_path: Path) -> None:
    """The storage stand-in exits 1 naming the port (gcp-storage-emulator alone waits for ever)."""
    argv = servers.command(servers.STORAGE, "127.0.0.1", {"port": taken}, PROJECT, None)
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert (1, f"127.0.0.1:{taken}") == (done.returncode, _named_port(done.stderr, taken))


def _named_port(stderr: str, port: int) -> str | None:
    return f"127.0.0.1:{port}" if f"127.0.0.1:{port}" in stderr else None


@pytest.mark.parametrize(
    ("name", "index"),
    [
        pytest.param(servers.STORAGE, 0, id="storage-http"),
        pytest.param(servers.PUBSUB, 0, id="pubsub-grpc"),
        pytest.param(servers.BIGQUERY, 0, id="bigquery-rest"),
        pytest.param(servers.BIGQUERY, 1, id="bigquery-grpc"),
    ],
)
def test_a_server_whose_port_was_taken_is_started_again_on_new_ports(
    name: str, index: int, taken: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first launch finds its port taken; the second, on new ports, answers."""
    answers = _hand_out_first(monkeypatch, taken, index)
    server, _ = start_alone(name, PROJECT, tmp_path / f"{name}.log", timeout=60)
    try:
        expected = (2, False)  # a second launch, on ports without the taken one
        assert expected == (len(answers), taken in server.ports.values())
    finally:
        servers.stop(server)


def test_a_server_that_fails_for_another_reason_is_not_started_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bad fault file ends the start at the first launch, with the server's own words."""
    answers = _hand_out_first(monkeypatch, servers.free_port(), 0)
    bad = tmp_path / "faults.json"
    bad.write_text("{not json")
    with pytest.raises(StackStartError, match="exited during start"):
        start_alone(servers.STORAGE, PROJECT, tmp_path / "s.log", extra_args=["--faults", str(bad)])
    launches = 1
    assert launches == len(answers)


def test_the_stack_is_started_again_when_a_chosen_port_was_taken(
    taken: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """start_stack: the BigQuery gRPC port handed out is taken; the stack starts on new ports."""
    answers = _hand_out_first(monkeypatch, taken, 2)  # pubsub, bigquery REST, bigquery gRPC, …
    stack = start_stack(tmp_path / "stack", persistent=False, timeout=60)
    try:
        grpc_port = stack.endpoints.bigquery_grpc_port
        expected = (2, True)  # ports chosen twice; the stand-in listens on the new one
        assert expected == (len(answers), grpc_port != taken and _listening(grpc_port))
    finally:
        stack.stop()


def _listening(port: int) -> bool:
    def answers() -> bool:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            return sock.connect_ex(("127.0.0.1", port)) == 0

    return wait_for(answers, 5)


def test_a_taken_port_logged_before_the_launch_does_not_count(tmp_path: Path) -> None:
    """port_taken reads only what the server wrote since its launch (an old line is history)."""
    log = tmp_path / "old.log"
    log.write_text("OSError: [Errno 98] Address already in use\n")
    argv = [sys.executable, "-c", "print('started')"]
    server = servers.launch(argv, servers.STORAGE, {"port": 1}, log, daemon=False)
    assert server.process is not None
    server.process.wait(timeout=30)
    assert not servers.port_taken(server)
