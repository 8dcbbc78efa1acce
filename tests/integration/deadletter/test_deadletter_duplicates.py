"""Pub/Sub redelivers or refuses acks: each bad row is still one line in the bucket.

A Pub/Sub emulator of its own runs with a fault plan: ``duplicate-delivery`` (a copy on a
later pull, often while the first is still buffered) with ``late-ack-redelivery`` (the ack
answered OK, the message back after its object was written); or
``acknowledge-unavailable`` (acks, nacks and lease extensions refused with UNAVAILABLE,
one by one or in an outage). The dead-letter writer reads it through the official
streaming-pull client and files into the local stack's Cloud Storage.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from plowline_cloud.clients import publisher_client, storage_client, subscriber_client
from plowline_cloud.clock import SystemClock
from plowline_cloud.metrics import MetricsRegistry
from plowline_cloud.pubsub.streaming import PubSubReceivedMessage, PubSubSubscriber
from plowline_cloud.storage import GcsBlobStore
from plowline_core.config import DeadLetterOptions
from plowline_deadletter.metrics import DeadLetterMetrics
from plowline_deadletter.writer import DeadLetterWriter
from plowline_devstack.faults.plan import parse_faults
from plowline_devstack.faults.pubsub import PubSubFaults
from plowline_devstack.pubsub import PubSubEmulator, wait_until_ready
from support.timing import wait_for

BUCKET = "plowline-bad-rows"
PROJECT = "plowline-deadletter-faults"
VENDOR = "iglu:com.snowplowanalytics.snowplow.badrows"
ROWS = 60


class FaultyPubSub:
    """A Pub/Sub emulator with a fault plan, a topic and a subscription on it."""

    def __init__(self, faults: dict[str, Any]) -> None:
        plan = parse_faults({"seed": 5, "pubsub": faults})
        self.faults = PubSubFaults(plan.for_server("pubsub"), plan.seed)
        self.emulator = PubSubEmulator("127.0.0.1", 0, faults=self.faults)
        port = self.emulator.start()
        wait_until_ready("127.0.0.1", port, timeout=10)
        self.endpoint = f"127.0.0.1:{port}"
        self.publisher = publisher_client(self.endpoint)
        self.subscriber = subscriber_client(self.endpoint)
        self.topic = self.publisher.topic_path(PROJECT, "bad-rows")
        self.subscription = self.subscriber.subscription_path(PROJECT, "bad-rows-deadletter")
        self.publisher.create_topic(name=self.topic)
        self.subscriber.create_subscription(
            name=self.subscription, topic=self.topic, ack_deadline_seconds=10
        )

    def close(self) -> None:
        """Close the clients and stop the emulator."""
        self.subscriber.close()
        self.emulator.stop()


@pytest.fixture(
    params=[
        pytest.param(
            {"duplicate-delivery": {"rate": 0.3}, "late-ack-redelivery": {"rate": 0.2}},
            id="duplicates-and-late-acks",
        ),
        pytest.param({"acknowledge-unavailable": {"rate": 0.3}}, id="acks-refused"),
        pytest.param({"acknowledge-unavailable": {"rate": 0.05, "seconds": 3}}, id="ack-outage-3s"),
    ]
)
def pubsub(request: pytest.FixtureRequest) -> Iterator[FaultyPubSub]:
    """Pub/Sub with one of the fault plans above."""
    faulty = FaultyPubSub(request.param)
    yield faulty
    faulty.close()


def _bad_row(n: int) -> bytes:
    schema = f"{VENDOR}/loader_parsing_error/jsonschema/2-0-0"
    return orjson.dumps({"schema": schema, "data": {"n": n}})


def _lines(client: Any, prefix: str) -> list[bytes]:
    blobs = client.list_blobs(BUCKET, prefix=prefix + "/")
    return [line for blob in blobs for line in blob.download_as_bytes().splitlines()]


def test_each_bad_row_is_written_once_under_pubsub_faults(
    pubsub: FaultyPubSub, local_stack: Any
) -> None:
    """60 bad rows, redelivered or their acks refused: 60 lines in the bucket, none twice."""
    storage = storage_client(local_stack.project, local_stack.endpoints.storage_url)
    prefix = f"duplicates-{uuid.uuid4().hex[:8]}"
    metrics = DeadLetterMetrics.create(MetricsRegistry(f"deadletter-{prefix}"))
    writer = DeadLetterWriter(
        GcsBlobStore(storage, BUCKET, prefix),
        SystemClock(),
        DeadLetterOptions(window=1, max_rows=25),
        metrics,
    )
    deliveries: list[str] = []

    def receive(delivery: PubSubReceivedMessage) -> None:
        deliveries.append(delivery.message_id)
        writer.receive(delivery)

    subscriber = PubSubSubscriber(pubsub.subscriber, pubsub.subscription)
    subscriber.start(receive)
    rows = [_bad_row(n) for n in range(ROWS)]
    for future in [pubsub.publisher.publish(pubsub.topic, row) for row in rows]:
        future.result(timeout=30)
    seen, quiet_since = 0, time.monotonic()

    def quiet_for_four_seconds() -> bool:
        nonlocal seen, quiet_since
        writer.tick()
        if len(deliveries) != seen or writer.pending:
            seen, quiet_since = len(deliveries), time.monotonic()
        return time.monotonic() - quiet_since >= 4

    wait_for(quiet_for_four_seconds, 60)
    writer.close()
    subscriber.stop(timeout=30)

    lines = _lines(storage, prefix)
    struck = len(deliveries) - len(set(deliveries)) + pubsub.faults.acks_refused
    assert (sorted(lines), struck > 0) == (sorted(rows), True)
