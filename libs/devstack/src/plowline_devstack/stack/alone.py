"""One stand-in started on its own: fresh ports, wait until it answers, relaunch if a port was taken.

Tests that need a server with its own faults or corrections (next to the shared local stack)
start it with :func:`start_alone`. Ports are chosen free and bound a moment later by the
server, so another process can take one in between; a server whose log says so is started
again on new ports, up to ``attempts`` times. Any other exit, or no answer in time, raises
:class:`~plowline_devstack.stack.lifecycle.StackStartError` with the server's log tail.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from plowline_devstack.endpoints import Endpoints
from plowline_devstack.stack import servers
from plowline_devstack.stack.lifecycle import (
    HOST,
    PORT_NAMES,
    StackStartError,
    endpoints_of,
    wait_for,
)

ATTEMPTS = 3


def start_alone(
    name: str,
    project: str,
    log: Path,
    *,
    extra_args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    daemon: bool = False,
    timeout: float = 60.0,
    attempts: int = ATTEMPTS,
) -> tuple[servers.ServerProcess, Endpoints]:
    """Start server ``name`` (in-memory) with ``extra_args``; return it once it answers.

    Notes:
        ``env`` None runs it with this process's environment. The endpoints carry only
        this server's ports (the others are 0).
    """
    for attempt in range(1, attempts + 1):
        ports = dict(
            zip(PORT_NAMES[name], servers.free_ports(len(PORT_NAMES[name]), HOST), strict=True)
        )
        argv = [*servers.command(name, HOST, ports, project, None), *extra_args]
        server = servers.launch(argv, name, ports, log, daemon=daemon, env=env)
        endpoints = endpoints_of(project, {name: ports})
        try:
            wait_for([server], endpoints, timeout)
        except StackStartError:
            servers.stop(server, grace=2.0)
            if attempt < attempts and servers.port_taken(server):
                continue
            raise
        return server, endpoints
    raise AssertionError("unreachable: the last attempt returns or raises")
