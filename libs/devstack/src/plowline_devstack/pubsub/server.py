"""Run the emulator in-process: ``PubSubEmulator``, ``wait_until_ready``, ``started_with_faults``."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from concurrent import futures
from contextlib import contextmanager
from pathlib import Path

import grpc
import structlog
from google.api_core import exceptions as core_exceptions
from plowline_cloud.clients import GRPC_OPTIONS, publish_api_client

from plowline_devstack.faults.plan import parse_faults
from plowline_devstack.faults.pubsub import NO_FAULTS, PubSubFaults
from plowline_devstack.pubsub.broker import Broker
from plowline_devstack.pubsub.journal import Journal, NullJournal, SqliteJournal
from plowline_devstack.pubsub.service import PubSubService

_log = structlog.get_logger("plowline.pubsub")
# Each open StreamingPull pins a worker thread: keep the pool far above the stream count.
_WORKERS = 96
_OPTIONS = [
    ("grpc.so_reuseport", 0),  # otherwise two emulators can silently share a port
    *GRPC_OPTIONS,  # the clients' own: whatever they send or ask for, the server takes
]


class PubSubEmulator:
    """A Pub/Sub emulator on ``host:port``, in memory or persisted under ``data_dir``.

    Notes:
        ``faults`` (default none) makes it fail as the real service can; see
        :mod:`plowline_devstack.faults.pubsub`.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        data_dir: Path | str | None = None,
        faults: PubSubFaults = NO_FAULTS,
    ) -> None:
        self.host = host
        self.port = port
        self.data_dir = Path(data_dir) if data_dir is not None else None
        self.faults = faults
        self._server: grpc.Server | None = None
        self._broker: Broker | None = None

    @property
    def endpoint(self) -> str:
        """Return ``host:port``, the value for ``PUBSUB_EMULATOR_HOST`` (no scheme)."""
        return f"{self.host}:{self.port}"

    def start(self) -> int:
        """Bind and start serving; return the bound port (port 0 picks a free one)."""
        journal: Journal = SqliteJournal(self.data_dir) if self.data_dir else NullJournal()
        self._broker = Broker(journal, faults=self.faults)
        server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=_WORKERS, thread_name_prefix="pubsub-rpc"),
            handlers=PubSubService(self._broker).handlers(),
            options=_OPTIONS,
            maximum_concurrent_rpcs=None,
        )
        try:
            bound = int(server.add_insecure_port(f"{self.host}:{self.port}"))
        except RuntimeError as error:
            self._broker.close()
            raise OSError(f"cannot bind Pub/Sub emulator to {self.host}:{self.port}") from error
        server.start()
        self._server, self.port = server, bound
        _log.info(
            "pubsub_emulator_listening",
            host=self.host,
            port=bound,
            data_dir=str(self.data_dir) if self.data_dir else None,
            faults=list(self.faults.names),
        )
        return bound

    def stop(self, grace: float = 1.0) -> None:
        """Stop serving (open streams are cancelled) and flush persisted state."""
        if self._server is not None:
            self._server.stop(grace).wait()
            self._server = None
        if self._broker is not None:
            self._broker.close()
            self._broker = None
        _log.info("pubsub_emulator_stopped", host=self.host, port=self.port)

    def __enter__(self) -> PubSubEmulator:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def wait_until_ready(host: str, port: int, timeout: float = 10.0) -> None:
    """Block until the official client can list topics on ``host:port``, or raise TimeoutError."""
    give_up = time.monotonic() + timeout
    with publish_api_client(f"{host}:{port}") as client:
        while True:
            try:
                client.list_topics(
                    request={"project": "projects/plowline-probe"}, retry=None, timeout=1.0
                )
                return
            except (core_exceptions.GoogleAPICallError, core_exceptions.RetryError) as error:
                if time.monotonic() >= give_up:
                    raise TimeoutError(
                        f"Pub/Sub emulator on {host}:{port} not ready: {error}"
                    ) from error
                time.sleep(0.1)


@contextmanager
def started_with_faults(
    plan: Mapping[str, object],
) -> Iterator[tuple[PubSubEmulator, PubSubFaults]]:
    """Start an in-memory emulator on a free loopback port failing as ``plan`` says; stop it after.

    ``plan`` is a fault plan as a fault file holds it (``{"seed": 4, "pubsub": {...}}``,
    :mod:`plowline_devstack.faults.plan`); the faults object is yielded too, for its counters.
    """
    parsed = parse_faults(plan)
    faults = PubSubFaults(parsed.for_server("pubsub"), parsed.seed)
    emulator = PubSubEmulator("127.0.0.1", 0, faults=faults)
    port = emulator.start()
    try:
        wait_until_ready("127.0.0.1", port, timeout=10)
        yield emulator, faults
    finally:
        emulator.stop()
