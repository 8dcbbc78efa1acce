"""Every bad line one bad row: republished copies and restarts add no line (local stack).

The writer reads a topic and subscription of its own on the local Pub/Sub emulator
through the official streaming-pull client, and files into gcp-storage-emulator through
``GcsBlobStore``: the copies come the way they come in production, a second message
with the same bytes (the loader publishing a bad row again) or a redelivery of the same
message after a writer died between writing its object and its ack reaching Pub/Sub.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson
import pytest
from plowline_cloud.clients import publisher_client, storage_client, subscriber_client
from plowline_cloud.clock import SystemClock
from plowline_cloud.metrics import MetricsRegistry
from plowline_cloud.pubsub.streaming import PubSubReceivedMessage, PubSubSubscriber
from plowline_cloud.storage import GcsBlobStore
from plowline_core.config import DeadLetterOptions
from plowline_deadletter.lookback import Lookback, recall_at_start
from plowline_deadletter.metrics import DeadLetterMetrics
from plowline_deadletter.writer import DeadLetterWriter
from support.stack import topic_with_subscription
from support.timing import wait_for

BUCKET = "plowline-bad-rows"
VENDOR = "iglu:com.snowplowanalytics.snowplow.badrows"
OPTIONS = DeadLetterOptions(window=1, max_rows=100)


@dataclass
class Channel:
    """A topic and a subscription of the test's own, with clients on both."""

    stack: Any
    name: str = field(default_factory=lambda: f"restart-{uuid.uuid4().hex[:8]}")

    def __post_init__(self) -> None:
        self.publisher = publisher_client(self.stack.endpoints.pubsub_target)
        self.subscriber = subscriber_client(self.stack.endpoints.pubsub_target)
        self.topic, self.subscription = topic_with_subscription(
            self.stack.endpoints.pubsub_target, self.stack.project, self.name
        )

    def publish(self, *messages: bytes) -> None:
        """Publish each message (a new message id each) and wait until Pub/Sub has it."""
        for future in [self.publisher.publish(self.topic, data) for data in messages]:
            future.result(timeout=30)


@dataclass
class Settled:
    """A delivery passed on to the writer, recording how the writer settled it.

    ``ack_lost``: the ack never reaches Pub/Sub (the writer is killed right after its
    write), so the message is delivered again once its lease runs out.
    """

    delivery: PubSubReceivedMessage
    ack_lost: bool = False
    settled: str | None = None

    @property
    def data(self) -> bytes:
        """The message's bytes."""
        return self.delivery.data

    @property
    def message_id(self) -> str:
        """The Pub/Sub message id."""
        return self.delivery.message_id

    @property
    def publish_time(self) -> datetime:
        """When Pub/Sub accepted the message."""
        return self.delivery.publish_time

    def ack(self) -> None:
        """Record the ack; pass it on unless it is lost."""
        self.settled = "ack"
        if not self.ack_lost:
            self.delivery.ack()

    def nack(self) -> None:
        """Record the nack and pass it on."""
        self.settled = "nack"
        self.delivery.nack()


@pytest.fixture
def channel(local_stack: Any) -> Iterator[Channel]:
    """A fresh topic and subscription on the local Pub/Sub emulator."""
    made = Channel(local_stack)
    yield made
    made.subscriber.close()


@pytest.fixture
def store(local_stack: Any) -> GcsBlobStore:
    """The bad-rows bucket under a fresh prefix."""
    client = storage_client(local_stack.project, local_stack.endpoints.storage_url)
    return GcsBlobStore(client, BUCKET, f"restart-{uuid.uuid4().hex[:8]}")


def _bad_row(n: int) -> bytes:
    schema = f"{VENDOR}/loader_parsing_error/jsonschema/2-0-0"
    return orjson.dumps({"schema": schema, "data": {"payload": f"line {n}", "n": n}})


def _writer(store: GcsBlobStore, name: str) -> tuple[DeadLetterWriter, DeadLetterMetrics]:
    metrics = DeadLetterMetrics.create(MetricsRegistry(f"deadletter-{name}-{uuid.uuid4().hex}"))
    return DeadLetterWriter(store, SystemClock(), OPTIONS, metrics), metrics


def _lines(store: GcsBlobStore) -> list[bytes]:
    return sorted(line for name in store.list() for line in store.get(name).splitlines())


def _settled(count: int) -> Callable[[list[Settled]], bool]:
    """Return a check: ``count`` deliveries received and each settled."""
    return lambda received: len(received) >= count and all(r.settled for r in received)


def _run(
    channel: Channel,
    writer: DeadLetterWriter,
    until: Callable[[list[Settled]], bool],
    ack_lost: bool = False,
    timeout: float = 60.0,
) -> list[Settled]:
    """Feed the subscription to ``writer`` until ``until(received)``; return the deliveries."""
    received: list[Settled] = []
    subscriber = PubSubSubscriber(channel.subscriber, channel.subscription)

    def receive(delivery: PubSubReceivedMessage) -> None:
        settled = Settled(delivery, ack_lost)
        received.append(settled)
        writer.receive(settled)

    def settled() -> bool:
        writer.tick()
        return until(received)

    subscriber.start(receive)
    wait_for(settled, timeout)
    subscriber.stop(timeout=30)
    return received


def test_a_bad_row_republished_under_a_new_message_id_is_one_line(
    channel: Channel, store: GcsBlobStore
) -> None:
    """The same bad row published twice at once and once after its object: one line, all acked."""
    writer, _ = _writer(store, "republished")
    twice, other = _bad_row(1), _bad_row(2)
    channel.publish(twice, other, twice)
    first = _run(channel, writer, _settled(3))
    channel.publish(twice + b"\n")  # the loader's republish, after the object was written
    later = _run(channel, writer, _settled(1))
    writer.close()
    ids = {r.message_id for r in first + later}
    expected = (sorted([twice, other]), ["ack"] * 4, 4)
    assert expected == (_lines(store), [r.settled for r in first + later], len(ids))


def test_a_restarted_writer_acks_the_redelivery_of_a_row_written_before_its_ack(
    channel: Channel, store: GcsBlobStore
) -> None:
    """Killed after the write, before the ack: the next writer recalls the row and acks its copy."""
    rows = [_bad_row(n) for n in range(3)]
    channel.publish(*rows)
    killed, _ = _writer(store, "killed")
    before = _run(channel, killed, _settled(3), ack_lost=True)  # the writer dies with its acks
    lines_before = _lines(store)
    restarted, metrics = _writer(store, "restarted")
    recalled = recall_at_start(
        store, restarted, SystemClock().now(), Lookback(600, 1), metrics, time.monotonic
    )
    after = _run(channel, restarted, _settled(3), timeout=90)
    restarted.close()
    redelivered = {r.message_id for r in after} == {r.message_id for r in before}
    expected = (sorted(rows), 3, True, sorted(rows), ["ack"] * 3, 0.0)
    actual = (
        lines_before,
        recalled.rows,
        redelivered,
        _lines(store),
        [r.settled for r in after],
        sum(
            s.value for s in metrics.rows_written.collect()[0].samples if s.name.endswith("_total")
        ),
    )
    assert expected == actual
