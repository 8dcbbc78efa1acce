"""The local stack: Pub/Sub, BigQuery and Cloud Storage stand-ins started, provisioned, stopped.

``start_stack`` launches the three servers on free loopback ports, waits until each answers
its official client, provisions a :class:`~plowline_devstack.stack.provisioning.StackConfig` and
returns a :class:`LocalStack`. ``up`` / ``down`` / ``read_state`` add a state file
(``stack.json`` in the data directory) so the CLI can leave the servers running and find
them again; ``up`` reuses every server that still answers.

Layout of a data directory::

    stack.json            pids, ports, project, provisioning config and faults on
    faults.json           the fault plan the servers were started with (when one is on)
    logs/<server>.log     each server's stdout and stderr
    pubsub/ bigquery/ storage/   each server's persistent data (when persistent)
"""

from __future__ import annotations

import importlib
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from plowline_core.errors import PlowlineError

from plowline_devstack.endpoints import Endpoints
from plowline_devstack.faults.plan import NO_FAULTS, FaultPlan, parse_faults
from plowline_devstack.stack import servers
from plowline_devstack.stack.config import StackConfig
from plowline_devstack.stack.servers import BIGQUERY, PUBSUB, SERVER_NAMES, STORAGE, ServerProcess

STATE_FILE = "stack.json"
FAULTS_FILE = "faults.json"
HOST = "127.0.0.1"
START_ATTEMPTS = 3
"""How many times ``start_stack`` picks new ports when a server finds one of its ports taken."""
PORT_NAMES = {PUBSUB: ("port",), BIGQUERY: ("port", "grpc_port"), STORAGE: ("port",)}


class StackStartError(PlowlineError):
    """A stand-in server exited or did not answer in time; the message carries its log tail."""


@dataclass(frozen=True, slots=True)
class ServerStatus:
    """One server as ``plowline dev status`` shows it."""

    name: str
    pid: int
    ports: Mapping[str, int]
    alive: bool
    answers: bool


@dataclass(slots=True)
class LocalStack:
    """A started stack: where it listens, what it holds, which processes serve it."""

    endpoints: Endpoints
    config: StackConfig
    data_dir: Path
    servers: dict[str, ServerProcess] = field(default_factory=dict)
    reused: tuple[str, ...] = ()
    faults: FaultPlan = NO_FAULTS

    def env(self) -> dict[str, str]:
        """Return the environment variables that point a service at this stack."""
        return self.endpoints.env()

    @property
    def project(self) -> str:
        """The project every resource lives in."""
        return self.config.project

    @property
    def dataset(self) -> str:
        """The BigQuery dataset id."""
        return self.config.dataset

    @property
    def table(self) -> str:
        """The events table id."""
        return self.config.table

    @property
    def table_ref(self) -> str:
        """``project.dataset.table`` of the events table."""
        return f"{self.config.project}.{self.config.dataset}.{self.config.table}"

    def topic_path(self, topic: str) -> str:
        """Return ``projects/P/topics/T`` of a provisioned topic."""
        if topic not in self.config.topics:
            raise KeyError(f"topic {topic!r} is not provisioned: {self.config.topics}")
        return f"projects/{self.config.project}/topics/{topic}"

    def subscription_path(self, subscription: str) -> str:
        """Return ``projects/P/subscriptions/S`` of a provisioned subscription."""
        if subscription not in self.config.subscriptions:
            raise KeyError(
                f"subscription {subscription!r} is not provisioned: {list(self.config.subscriptions)}"
            )
        return f"projects/{self.config.project}/subscriptions/{subscription}"

    def status(self) -> list[ServerStatus]:
        """Ask every server whether it runs and answers."""
        return [
            ServerStatus(
                s.name,
                s.pid,
                s.ports,
                servers.is_alive(s),
                _probes().answers(s.name, self.endpoints),
            )
            for s in self.servers.values()
        ]

    def stop(self, grace: float = 5.0) -> None:
        """Stop every server (SIGTERM, SIGKILL after ``grace``)."""
        for server in self.servers.values():
            servers.stop(server, grace)

    def save(self) -> Path:
        """Write the state file and return its path."""
        path = self.data_dir / STATE_FILE
        state = {
            "project": self.endpoints.project,
            "config": self.config.to_json(),
            "faults": self.faults.to_json(),
            "servers": {name: s.to_json() for name, s in self.servers.items()},
        }
        path.write_text(json.dumps(state, indent=2) + "\n")
        return path


def start_stack(
    data_dir: Path,
    config: StackConfig | None = None,
    *,
    persistent: bool = True,
    daemon: bool = False,
    timeout: float = 30.0,
    faults: FaultPlan = NO_FAULTS,
) -> LocalStack:
    """Start the three servers under ``data_dir``, wait for them and provision ``config``.

    Notes:
        With ``daemon`` false (tests) the servers die with this process; ``up`` starts
        daemons that outlive it. A server whose port was taken between choosing and binding
        it is started again, with all ports chosen anew (``START_ATTEMPTS`` in all).
        ``faults`` (default none; :mod:`plowline_devstack.faults.plan`)
        makes the servers fail as Google's services can.
    """
    config = config or StackConfig()
    data_dir.mkdir(parents=True, exist_ok=True)
    wanted = [(name, port) for name in SERVER_NAMES for port in PORT_NAMES[name]]
    for attempt in range(1, START_ATTEMPTS + 1):
        chosen = iter(servers.free_ports(len(wanted), HOST))
        ports: dict[str, dict[str, int]] = {name: {} for name in SERVER_NAMES}
        for name, port in wanted:
            ports[name][port] = next(chosen)
        stack = LocalStack(
            endpoints_of(config.project, ports), config, data_dir.resolve(), faults=faults
        )
        try:
            _launch_missing(stack, ports, persistent=persistent, daemon=daemon, timeout=timeout)
        except StackStartError:
            taken = any(servers.port_taken(server) for server in stack.servers.values())
            if attempt < START_ATTEMPTS and taken:
                continue  # another process took a chosen port before its server bound it
            raise
        return stack
    raise AssertionError("unreachable: the last attempt returns or raises")


def up(
    data_dir: Path,
    config: StackConfig | None = None,
    *,
    timeout: float = 30.0,
    faults: FaultPlan | None = None,
) -> LocalStack:
    """Bring the stack described by ``data_dir``'s state file up, reusing what still answers.

    Notes:
        ``faults`` None keeps the faults the stack had; a server whose faults change is
        restarted (on its old ports, with its persisted data) so the new plan applies.
    """
    previous = read_state(data_dir)
    if previous is None:
        stack = start_stack(
            data_dir, config, daemon=True, timeout=timeout, faults=faults or NO_FAULTS
        )
        stack.save()
        return stack
    config = config or previous.config
    plan = previous.faults if faults is None else faults
    ports: dict[str, dict[str, int]] = {}
    keep: dict[str, ServerProcess] = {}
    for name in SERVER_NAMES:
        old = previous.servers.get(name)
        changed = plan.for_server(name) != previous.faults.for_server(name)
        if old is not None and changed:
            servers.stop(old)
        if (
            old is not None
            and not changed
            and servers.is_alive(old)
            and _probes().answers(name, previous.endpoints)
        ):
            keep[name] = old
            ports[name] = dict(old.ports)
        else:
            wanted = dict(old.ports) if old is not None else {}
            ports[name] = {p: _port_or_free(wanted.get(p)) for p in PORT_NAMES[name]}
    stack = LocalStack(
        endpoints_of(config.project, ports), config, data_dir.resolve(), keep, tuple(keep), plan
    )
    _launch_missing(stack, ports, persistent=True, daemon=True, timeout=timeout)
    if keep:
        _provision(stack)  # idempotent: a changed config adds what is new
    stack.save()
    return stack


def down(data_dir: Path, grace: float = 5.0) -> LocalStack | None:
    """Stop the servers named in ``data_dir``'s state file and remove it; None if there was none."""
    stack = read_state(data_dir)
    if stack is None:
        return None
    stack.stop(grace)
    (data_dir / STATE_FILE).unlink(missing_ok=True)
    return stack


def read_state(data_dir: Path) -> LocalStack | None:
    """Load the stack recorded in ``data_dir``; None when no state file exists."""
    path = data_dir / STATE_FILE
    if not path.is_file():
        return None
    state = json.loads(path.read_text())
    found = {name: ServerProcess.from_json(raw) for name, raw in state["servers"].items()}
    ports = {name: dict(s.ports) for name, s in found.items()}
    config = StackConfig.from_json(state["config"])
    faults = parse_faults(state.get("faults", {}))
    return LocalStack(
        endpoints_of(config.project, ports), config, data_dir.resolve(), found, faults=faults
    )


def endpoints_of(project: str, ports: Mapping[str, Mapping[str, int]]) -> Endpoints:
    """Return the endpoints of servers' ``ports`` by server name (0 for a server not named)."""

    def port(name: str, key: str = "port") -> int:
        return int(ports.get(name, {}).get(key, 0))

    return Endpoints(
        project, port(PUBSUB), port(BIGQUERY), port(BIGQUERY, "grpc_port"), port(STORAGE), HOST
    )


def _port_or_free(port: int | None) -> int:
    return port if port and servers.port_is_free(port, HOST) else servers.free_port(HOST)


def _launch_missing(
    stack: LocalStack,
    ports: Mapping[str, Mapping[str, int]],
    *,
    persistent: bool,
    daemon: bool,
    timeout: float,
) -> None:
    """Launch every server the stack lacks, wait until all answer, then provision."""
    started = []
    fault_file = _write_faults(stack)
    for name in SERVER_NAMES:
        if name in stack.servers:
            continue
        store = stack.data_dir / name if persistent else None
        if store is not None:
            store.mkdir(parents=True, exist_ok=True)
        argv = servers.command(name, HOST, ports[name], stack.config.project, store)
        if fault_file is not None and stack.faults.for_server(name):
            argv += ["--faults", str(fault_file)]
        log = stack.data_dir / "logs" / f"{name}.log"
        env = servers.environment(name, stack.endpoints.storage_url)
        stack.servers[name] = servers.launch(argv, name, ports[name], log, daemon=daemon, env=env)
        started.append(stack.servers[name])
    try:
        wait_until_ready(stack, timeout)
        _provision(stack)
    except BaseException:
        for server in started:
            servers.stop(server, grace=2.0)
        raise


def _write_faults(stack: LocalStack) -> Path | None:
    """Write the stack's fault plan for its servers to read; None when no fault is on."""
    path = stack.data_dir / FAULTS_FILE
    if not stack.faults.faults:
        path.unlink(missing_ok=True)
        return None
    path.write_text(json.dumps(stack.faults.to_json(), indent=2) + "\n")
    return path


def wait_until_ready(stack: LocalStack, timeout: float) -> None:
    """Poll each server until it answers; raise StackStartError with its log tail if not."""
    wait_for(list(stack.servers.values()), stack.endpoints, timeout)


def wait_for(started: list[ServerProcess], endpoints: Endpoints, timeout: float) -> None:
    """Poll each of ``started`` at ``endpoints`` until it answers; raise StackStartError if not."""
    deadline = time.monotonic() + timeout
    pending = list(started)
    while pending:
        for server in list(pending):
            if not servers.is_alive(server):
                raise StackStartError(failure_message(server, "exited during start"))
            if _probes().answers(server.name, endpoints):
                pending.remove(server)
        if pending and time.monotonic() > deadline:
            raise StackStartError(
                failure_message(pending[0], f"did not answer within {timeout:.0f} s")
            )
        if pending:
            time.sleep(0.1)


def _probes() -> ModuleType:
    # Imported on first use: the Google clients take seconds to import, time better spent
    # while the servers start.
    return importlib.import_module("plowline_devstack.stack.probes")


def _provision(stack: LocalStack) -> None:
    from plowline_devstack.stack.provisioning import provision

    provision(stack.config, stack.endpoints)


def failure_message(server: ServerProcess, what: str) -> str:
    """Return why ``server`` did not start (``what``), with its pid, ports and log tail."""
    return f"{server.name} server (pid {server.pid}, ports {dict(server.ports)}) {what}; log {server.log}:\n{servers.log_tail(server.log)}"
