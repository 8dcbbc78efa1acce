"""Loader integration fixtures: one Pub/Sub emulator and one warmed Spark session per test session.

Spark starts in ~4 s and its first micro-batch costs ~5 s more, so the session is built
once and warmed by a one-message streaming query through the ``pubsub`` source.
Processors handed to Spark run in executor Python workers, which cannot import this
conftest: the module is registered for pickling by value.

``mode_rig`` (a :class:`ModeRig`, re-exported here for the tests' type imports),
``streaming_rig`` and ``spawn_loader`` live in ``support.loader_rigs``, a plugin the root
conftest registers: the e2e tier uses them too.
"""

from __future__ import annotations

import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from plowline_cloud.clients import publisher_client, subscriber_client
from plowline_devstack.pubsub import PubSubEmulator, wait_until_ready
from plowline_loader.source.acking import AckingPartition
from plowline_loader.spark.session import SparkSettings, build_spark_session
from pyspark import cloudpickle
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql.streaming import StreamingQuery
from support.loader_rigs import ModeRig as ModeRig  # re-exported: `from conftest import ModeRig`
from support.stack import topic_with_subscription

cloudpickle.register_pickle_by_value(sys.modules[__name__])

PROJECT = "projects/plowline-loader-test"


@dataclass(frozen=True)
class Channel:
    """A fresh topic with one subscription, and the official clients to reach them."""

    topic: str
    subscription: str
    endpoint: str
    emulator: PubSubEmulator

    def publish(self, count: int, prefix: str = "m") -> set[str]:
        """Publish ``count`` small messages; return their message ids."""
        publisher = publisher_client(self.endpoint)
        futures = [
            publisher.publish(self.topic, f"{prefix}-{i}".encode(), n=str(i)) for i in range(count)
        ]
        return {future.result(timeout=30) for future in futures}

    def outstanding(self) -> int:
        """Return how many messages are waiting or leased (not yet acked) in the subscription."""
        # The emulator has no public introspection yet; its broker is the only honest witness
        # of leased-but-unacked messages (a pull cannot see them until their deadline).
        broker: Any = self.emulator._broker
        return int(broker.backlog(self.subscription).backlog_size())


@dataclass(frozen=True)
class RecordIds:
    """A partition processor that records each row's message id in a file of its own."""

    directory: str

    def __call__(self, rows: list[Row]) -> None:
        """Write the partition's message ids to a new file (the durable outcome)."""
        target = Path(self.directory)
        target.mkdir(parents=True, exist_ok=True)
        lines = "".join(f"{row['message_id']}\n" for row in rows)
        (target / f"{uuid.uuid4().hex}.txt").write_text(lines)


@dataclass(frozen=True)
class SlowRecordIds:
    """A partition processor that works longer than the subscription's ack deadline."""

    directory: str
    seconds: float

    def __call__(self, rows: list[Row]) -> None:
        """Signal the start, wait ``seconds`` (a slow sink), then record the message ids."""
        started = Path(self.directory) / "started"
        started.mkdir(parents=True, exist_ok=True)
        (started / uuid.uuid4().hex).touch()
        # Real time on purpose: the emulator's ack deadlines run on the wall clock.
        time.sleep(self.seconds)
        RecordIds(self.directory)(rows)


class Thief:
    """Pull from a subscription while a slow batch runs; whatever it gets had its lease lapse.

    Notes:
        It starts pulling only once a ``SlowRecordIds`` signalled that its partition is in
        hand, so every message is leased by then; anything it receives was redelivered.
        It nacks what it takes, so nothing is lost to the test itself.
    """

    def __init__(self, channel: Channel, started: Path) -> None:
        self.stolen: list[str] = []
        self._channel = channel
        self._started = started
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Thief:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set() and not any(self._started.glob("*")):
            self._stop.wait(0.1)
        client = subscriber_client(self._channel.endpoint)
        while not self._stop.is_set():
            response = client.pull(
                request={"subscription": self._channel.subscription, "max_messages": 100},
                timeout=2.0,
            )
            received = list(response.received_messages)
            self.stolen.extend(r.message.message_id for r in received)
            if received:
                client.modify_ack_deadline(
                    request={
                        "subscription": self._channel.subscription,
                        "ack_ids": [r.ack_id for r in received],
                        "ack_deadline_seconds": 0,
                    }
                )


@dataclass(frozen=True)
class Explode:
    """A partition processor that always fails before anything is durable."""

    def __call__(self, rows: list[Row]) -> None:
        """Raise, as a sink that lost its backend would."""
        raise RuntimeError(f"sink unavailable for {len(rows)} rows")


def _recorded(directory: Path) -> list[str]:
    return [line for path in sorted(directory.rglob("*.txt")) for line in path.read_text().split()]


def _per_batch_writer(directory: Path, endpoint: str) -> Callable[[DataFrame, int], None]:
    def write(frame: DataFrame, batch_id: int) -> None:
        frame.foreachPartition(
            AckingPartition(RecordIds(str(directory / f"batch-{batch_id}")), endpoint)
        )

    return write


def _start_query(
    spark: SparkSession,
    channel: Channel,
    write: Callable[[DataFrame, int], None],
    checkpoint: Path,
    **options: str,
) -> StreamingQuery:
    reader = (
        spark.readStream.format("pubsub")
        .option("subscription", channel.subscription)
        .option("emulatorHost", channel.endpoint)
        .option("pullTimeoutSeconds", "0.5")
    )
    for key, value in options.items():
        reader = reader.option(key, value)
    return (
        reader.load()
        .writeStream.foreachBatch(write)
        .option("checkpointLocation", str(checkpoint))
        .start()
    )


def _drain(query: StreamingQuery) -> None:
    # Stopping during a commit only logs an InterruptedException; draining first avoids it.
    try:
        query.processAllAvailable()
    finally:
        query.stop()


@dataclass(frozen=True)
class Harness:
    """Run pubsub → foreachBatch queries in the warmed session, with outputs under ``root``."""

    spark: SparkSession
    root: Path

    def recorder(self, name: str = "out") -> RecordIds:
        """Return a processor recording message ids under ``root/name``."""
        return RecordIds(str(self.root / name))

    def recorded(self, name: str = "out") -> list[str]:
        """Return every message id recorded under ``root/name`` (with duplicates)."""
        return _recorded(self.root / name)

    def slow_recorder(self, seconds: float, name: str = "out") -> SlowRecordIds:
        """Return a processor that records under ``root/name`` after ``seconds``."""
        return SlowRecordIds(str(self.root / name), seconds)

    def thief(self, channel: Channel, name: str = "out") -> Thief:
        """Return a context that steals lapsed leases once a slow recorder under ``name`` started."""
        return Thief(channel, self.root / name / "started")

    def exploding(self) -> Explode:
        """Return a processor that fails before anything is durable."""
        return Explode()

    def planned_batches(self) -> list[str]:
        """Return the batch ids written to the checkpoint's offset log."""
        return sorted(path.name for path in (self.root / "cp" / "offsets").glob("[0-9]*"))

    def batch_sizes(self, name: str = "out") -> list[int]:
        """Return the row count of each micro-batch recorded by ``per_batch_writer``."""
        return [len(_recorded(batch)) for batch in sorted((self.root / name).glob("batch-*"))]

    def per_batch_writer(
        self, channel: Channel, name: str = "out"
    ) -> Callable[[DataFrame, int], None]:
        """Return a foreachBatch function recording each batch's ids under ``root/name/batch-N``."""
        return _per_batch_writer(self.root / name, channel.endpoint)

    def start(
        self, channel: Channel, write: Callable[[DataFrame, int], None], **options: str
    ) -> StreamingQuery:
        """Start a query over ``channel`` (checkpoint ``root/cp``, short pull timeout)."""
        return _start_query(self.spark, channel, write, self.root / "cp", **options)

    def drain(self, query: StreamingQuery) -> None:
        """Process everything available, then stop the query."""
        _drain(query)


@pytest.fixture(scope="session")
def pubsub_emulator() -> Iterator[PubSubEmulator]:
    """An in-memory Pub/Sub emulator on a free loopback port."""
    emulator = PubSubEmulator("127.0.0.1", 0)
    port = emulator.start()
    wait_until_ready("127.0.0.1", port, timeout=10)
    yield emulator
    emulator.stop()


@pytest.fixture
def channel(pubsub_emulator: PubSubEmulator) -> Channel:
    """A new topic and subscription (ack deadline 10 s) on the emulator."""
    return _new_channel(pubsub_emulator)


def _new_channel(emulator: PubSubEmulator) -> Channel:
    name = uuid.uuid4().hex[:12]
    project = PROJECT.removeprefix("projects/")
    topic, subscription = topic_with_subscription(
        emulator.endpoint, project, f"t-{name}", f"s-{name}"
    )
    return Channel(topic, subscription, emulator.endpoint, emulator)


@pytest.fixture(scope="session")
def spark(
    pubsub_emulator: PubSubEmulator, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SparkSession]:
    """A local[2] Spark session, warmed by one micro-batch through the pubsub source."""
    session = build_spark_session(SparkSettings(app_name="plowline-loader-tests"))
    warm = _new_channel(pubsub_emulator)
    warm.publish(1)
    root = tmp_path_factory.mktemp("spark-warmup")
    _drain(_start_query(session, warm, _per_batch_writer(root / "out", warm.endpoint), root / "cp"))
    yield session
    session.stop()


@pytest.fixture
def harness(spark: SparkSession, tmp_path: Path) -> Harness:
    """Queries in the warmed session with outputs and checkpoint under this test's tmp dir."""
    return Harness(spark, tmp_path)
