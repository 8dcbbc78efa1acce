"""``plowline-mutator serve`` as a real process on the local stack, under hostile clients.

One server per module, over a fresh events table, Iglu Central (embedded) and the local
stack's BigQuery: schemathesis checks the served ``/openapi.json`` against what the server
does (every check), and raw sockets prove the gate answers before a body is read.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from plowline_cloud.clients import bigquery_client
from plowline_cloud.events_table import create_events_table
from plowline_core.event.fields import ATOMIC_COLUMNS
from plowline_devstack.stack.lifecycle import LocalStack
from plowline_devstack.stack.servers import free_port
from support.timing import wait_until

TOKEN = "served-token"
MIB = 1 << 20
MAX_BODY = 64 * 1024
EXAMPLES = Path(__file__).resolve().parents[3] / "libs/devstack/src/plowline_devstack/examples"


@dataclass(frozen=True)
class Served:
    """A running mutator API: where it listens and its log."""

    port: int
    log: Path

    @property
    def url(self) -> str:
        """The server's base URL."""
        return f"http://127.0.0.1:{self.port}"


def _healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1) as reply:
            return int(reply.status) == 200
    except (urllib.error.URLError, OSError):
        return False


def _files(stack: LocalStack, folder: Path, iglu_central: Path) -> tuple[Path, Path]:
    """Write a config for a fresh events table and a resolver over Iglu Central."""
    table = f"events_api_{uuid.uuid4().hex[:8]}"
    client = bigquery_client(stack.project, stack.endpoints.bigquery_url)
    create_events_table(client, f"{stack.project}.{stack.dataset}.{table}", ATOMIC_COLUMNS)
    client.close()  # type: ignore[no-untyped-call]  # untyped in the client
    config = json.loads((EXAMPLES / "config.json").read_text())
    config["data"].update(projectId=stack.project, datasetId=stack.dataset, tableId=table)
    repository = {"name": "Iglu Central", "priority": 0, "vendorPrefixes": []}
    repository["connection"] = {"embedded": {"path": str(iglu_central)}}
    resolver = json.loads((EXAMPLES / "resolver.json").read_text())
    resolver["data"]["repositories"] = [repository]
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "resolver.json").write_text(json.dumps(resolver))
    return folder / "config.json", folder / "resolver.json"


@pytest.fixture(scope="module")
def served(
    local_stack: LocalStack, tmp_path_factory: pytest.TempPathFactory, iglu_central_dir: Path
) -> Iterator[Served]:
    """``plowline-mutator serve --no-listen`` with a token and the default body limit."""
    folder = tmp_path_factory.mktemp("served-mutator")
    config, resolver = _files(local_stack, folder, iglu_central_dir)
    port = free_port()
    command = [
        str(Path(sys.executable).parent / "plowline-mutator"), "serve", "--no-listen",
        "--config", str(config), "--resolver", str(resolver), "--port", str(port),
        "--max-body-bytes", str(MAX_BODY),
    ]  # fmt: skip
    env = {**os.environ, **local_stack.env(), "PLOWLINE_MUTATOR_TOKEN": TOKEN}
    env["PLOWLINE_MUTATOR_LOG_JSON"] = "false"
    log = folder / "serve.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(command, env=env, stdout=sink, stderr=subprocess.STDOUT)

    def state() -> str | None:
        if _healthy(port):
            return "up"
        return "exited" if process.poll() is not None else None

    try:
        if wait_until(state, 60) != "up":
            pytest.fail(f"serve did not come up:\n{log.read_text()[-3000:]}")
        yield Served(port, log)
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_served_api_does_what_its_document_says(served: Served, tmp_path: Path) -> None:
    """schemathesis, every check, against /openapi.json of the running server: no failure."""
    command = [
        str(Path(sys.executable).parent / "st"), "run", f"{served.url}/openapi.json",
        "--checks", "all", "--header", f"Authorization: Bearer {TOKEN}",
        "--max-examples", "60", "--seed", "15", "--request-timeout", "20",
        "--no-color",
    ]  # fmt: skip
    run = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    report = run.stdout[-6000:] + run.stderr[-2000:]
    expected = 0
    assert expected == run.returncode, (
        f"{report}\n--- server log ---\n{served.log.read_text()[-3000:]}"
    )


# -- raw HTTP: what the server reads before it answers ------------------------------------


def _connect(served: Served) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", served.port), timeout=10)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 64 * 1024)
    return sock


def _answer_and_close(sock: socket.socket) -> tuple[int, bool]:
    """Read the answer; return its status and whether the server then closed the connection."""
    data = b""
    closed = False
    while True:
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            break
        except ConnectionResetError:
            closed = True
            break
        if not chunk:
            closed = True
            break
        data += chunk
    status = int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/1.1 ") else 0
    return status, closed


def _post_head(served: Served, extra: str) -> bytes:
    return (
        f"POST /v1/columns HTTP/1.1\r\nHost: 127.0.0.1:{served.port}\r\n"
        f"Content-Type: application/json\r\n{extra}\r\n"
    ).encode()


def _push(sock: socket.socket, size: int) -> int:
    """Send up to ``size`` body bytes; return how many went before the server hung up."""
    sent = 0
    block = b"x" * MIB
    try:
        while sent < size:
            sent += sock.send(block[: size - sent])
    except (BrokenPipeError, ConnectionResetError):
        pass
    return sent


def test_anonymous_64_mib_post_is_refused_unread(served: Served) -> None:
    """An anonymous POST announcing 64 MiB is answered 401 before a body byte is sent.

    The server answers from the headers alone (a server that read the body first would
    still be waiting for it) and hangs up, so the 64 MiB can never be pushed into it.
    """
    with _connect(served) as sock:
        sock.sendall(_post_head(served, f"Content-Length: {64 * MIB}\r\n"))
        status, closed = _answer_and_close(sock)
        pushed = _push(sock, 64 * MIB)
    expected = (401, True, True)
    assert expected == (status, closed, pushed < 64 * MIB)


def test_declared_length_over_the_limit_is_refused_unread(served: Served) -> None:
    """With the token, a Content-Length over the limit gets 413 before the body is sent."""
    with _connect(served) as sock:
        head = f"Authorization: Bearer {TOKEN}\r\nContent-Length: {64 * MIB}\r\n"
        sock.sendall(_post_head(served, head))
        status, closed = _answer_and_close(sock)
    expected = (413, True)
    assert expected == (status, closed)


def test_chunked_body_past_the_limit_is_cut_off(served: Served) -> None:
    """With the token, a chunked body that never ends gets 413 once it passes the limit."""
    chunk = b"4000\r\n" + b"x" * 0x4000 + b"\r\n"  # 16 KiB per chunk
    with _connect(served) as sock:
        head = f"Authorization: Bearer {TOKEN}\r\nTransfer-Encoding: chunked\r\n"
        sock.sendall(_post_head(served, head))
        sock.sendall(chunk * (MAX_BODY // 0x4000 + 1))  # one chunk past the limit, no end
        status, closed = _answer_and_close(sock)
    expected = (413, True)
    assert expected == (status, closed)
