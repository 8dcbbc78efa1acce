"""The three stand-in servers as child processes: command lines, launch, readiness, stop.

Each server runs in its own session (so ``plowline dev up`` can exit and leave it
running) with stdout and stderr in a log file. Readiness probes live in
:mod:`plowline_devstack.stack.probes` (they import the Google clients, which is slow: the
stack launches the servers first and imports the probes while they start).

Notes:
    A pid read back from a state file is only signalled when its command line still
    names the server's module, so a recycled pid is never killed.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

PUBSUB, BIGQUERY, STORAGE = "pubsub", "bigquery", "storage"
SERVER_NAMES = (PUBSUB, BIGQUERY, STORAGE)
_PR_SET_PDEATHSIG = 1
_PORT_TAKEN = ("failed to bind to address", "address already in use", "errno 98")
_MODULES = {
    PUBSUB: "plowline_devstack.pubsub",
    BIGQUERY: "plowline_devstack.bigquery",
    STORAGE: "plowline_devstack.storage",
}


@dataclass(frozen=True, slots=True)
class ServerProcess:
    """One launched server: its name, pid, ports and log file."""

    name: str
    pid: int
    ports: Mapping[str, int]
    log: Path
    extra_args: tuple[str, ...] = ()
    process: subprocess.Popen[bytes] | None = field(default=None, compare=False, repr=False)
    log_start: int = field(default=0, compare=False, repr=False)

    def to_json(self) -> dict[str, object]:
        """Return the state-file form."""
        return {"name": self.name, "pid": self.pid, "ports": dict(self.ports), "log": str(self.log)}

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> ServerProcess:
        """Read the state-file form."""
        ports = data["ports"]
        assert isinstance(ports, dict)
        return cls(
            str(data["name"]),
            int(str(data["pid"])),
            {str(k): int(v) for k, v in ports.items()},
            Path(str(data["log"])),
        )


def command(
    name: str, host: str, ports: Mapping[str, int], project: str, data_dir: Path | None
) -> list[str]:
    """Return the command line that starts server ``name``."""
    python = [sys.executable, "-m", _MODULES[name]]
    if name == STORAGE:
        store = ["-d", str(data_dir)] if data_dir else []
        memory = [] if data_dir else ["--no-store-on-disk"]
        return [
            *python,
            *store,
            "start",
            "--host",
            host,
            "--port",
            str(ports["port"]),
            "-q",
            *memory,
        ]
    base = [*python, "--host", host, "--port", str(ports["port"])]
    if name == BIGQUERY:
        base += ["--grpc-port", str(ports["grpc_port"]), "--project", project]
    return base + (["--data-dir", str(data_dir)] if data_dir else [])


def environment(name: str, storage_url: str | None) -> dict[str, str] | None:
    """Return the environment server ``name`` runs with (None: this process's own).

    Notes:
        The BigQuery server reads ``gs://`` load-job sources from the storage emulator
        named by ``STORAGE_EMULATOR_HOST`` in its own environment (``FILE_LOADS``); it
        only downloads at load time, so the storage server need not be up first.
    """
    if name != BIGQUERY or not storage_url:
        return None
    return {**os.environ, "STORAGE_EMULATOR_HOST": storage_url}


def launch(
    argv: Sequence[str],
    name: str,
    ports: Mapping[str, int],
    log: Path,
    *,
    daemon: bool = True,
    env: Mapping[str, str] | None = None,
) -> ServerProcess:
    """Start ``argv`` with output going to ``log`` (and ``env``, when given, as its environment).

    Notes:
        A daemon gets its own session and outlives its parent (``plowline dev up``); a
        non-daemon is sent SIGTERM when its parent dies, so a killed test session leaves
        no server behind.
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        start = out.tell()
        process = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=log.parent,
            env=None if env is None else dict(env),
            preexec_fn=None if daemon else _die_with_parent,
        )
    return ServerProcess(name, process.pid, dict(ports), log, tuple(argv), process, start)


def _die_with_parent() -> None:
    """Ask Linux to SIGTERM this (child) process when its parent exits."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def free_port(host: str = "127.0.0.1") -> int:
    """Return a loopback port nobody listens on right now."""
    return free_ports(1, host)[0]


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """Return ``count`` distinct loopback ports nobody listens on right now.

    Notes:
        The sockets stay bound until all are chosen: asking for ports one at a time can hand
        out the same port twice (the kernel reuses a port as soon as its socket closes).
    """
    sockets = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind((host, 0))
        return [int(sock.getsockname()[1]) for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    """Return True when ``port`` can be bound on ``host``."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # As the servers do: a port whose old connections sit in TIME_WAIT is free to listen on.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
        return True


def is_alive(server: ServerProcess) -> bool:
    """Return True when the server's process runs (and is still that server)."""
    if server.process is not None:
        return server.process.poll() is None
    try:
        cmdline = Path(f"/proc/{server.pid}/cmdline").read_bytes()
    except OSError:
        return False
    return _MODULES[server.name].encode() in cmdline


def port_taken(server: ServerProcess) -> bool:
    """Return True when the server's log, since its launch, says one of its ports was taken.

    Notes:
        Ports are chosen free and bound a moment later by the server, so another process
        can take one in between; a server that says so is relaunched on new ports. The
        signatures are gRPC's, uvicorn's and Python's sockets' own words.
    """
    text = log_since(server.log, server.log_start).lower()
    return any(sign in text for sign in _PORT_TAKEN)


def log_since(log: Path, offset: int) -> str:
    """Return what ``log`` holds past byte ``offset`` ("" when it cannot be read)."""
    try:
        with log.open("rb") as file:
            file.seek(offset)
            return file.read().decode(errors="replace")
    except OSError:
        return ""


def log_tail(log: Path, lines: int = 30) -> str:
    """Return the last ``lines`` lines of a server log."""
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:])


def stop(server: ServerProcess, grace: float = 5.0) -> None:
    """SIGTERM the server, SIGKILL it when it has not exited after ``grace`` seconds."""
    if not is_alive(server):
        _reap(server)
        return
    _signal(server.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if not is_alive(server) or _reaped(server):
            return
        time.sleep(0.05)
    _signal(server.pid, signal.SIGKILL)
    _reap(server)


def _signal(pid: int, sig: signal.Signals) -> None:
    # The server leads its own session; signalling the group reaches any helper it forked.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def _reaped(server: ServerProcess) -> bool:
    return server.process is not None and server.process.poll() is not None


def _reap(server: ServerProcess) -> None:
    if server.process is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            server.process.wait(timeout=5.0)
