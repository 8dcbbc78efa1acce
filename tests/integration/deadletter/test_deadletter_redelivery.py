"""A redelivered unparseable message adds no object: the writer against Cloud Storage's stand-in."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from plowline_cloud.clients import storage_client
from plowline_cloud.metrics import MetricsRegistry
from plowline_cloud.storage import GcsBlobStore
from plowline_core.config import DeadLetterOptions
from plowline_core.testing.clock import FixedClock
from plowline_deadletter.metrics import DeadLetterMetrics
from plowline_deadletter.writer import DeadLetterWriter

BUCKET = "plowline-bad-rows"
PUBLISHED = datetime(2026, 11, 24, 6, 0, 1, tzinfo=UTC)


@dataclass
class Redelivered:
    """One delivery of a message with a fixed id and publish time; records its settlement."""

    data: bytes
    message_id: str
    publish_time: datetime = PUBLISHED
    settled: str | None = None

    def ack(self) -> None:
        """Record an ack."""
        self.settled = "ack"

    def nack(self) -> None:
        """Record a nack."""
        self.settled = "nack"


def test_a_duplicate_delivery_of_an_unparseable_message_is_one_object(local_stack: Any) -> None:
    """Two deliveries of one unparseable message, by two writers: one .bin object, both acked."""
    client = storage_client(local_stack.project, local_stack.endpoints.storage_url)
    prefix = f"redelivery-{uuid.uuid4().hex[:8]}"
    store = GcsBlobStore(client, BUCKET, prefix)
    options = DeadLetterOptions(window=60, max_rows=100)
    deliveries = [Redelivered(b"not json\n\x00", "4711"), Redelivered(b"not json\n\x00", "4711")]
    for n, delivery in enumerate(deliveries):  # a restarted writer: fresh state, same bucket
        metrics = DeadLetterMetrics.create(MetricsRegistry(f"deadletter-redelivery-{n}"))
        writer = DeadLetterWriter(store, FixedClock(PUBLISHED), options, metrics)
        writer.receive(delivery)
        writer.close()

    objects = [blob.name for blob in client.list_blobs(BUCKET, prefix=prefix + "/")]
    expected = ([f"{prefix}/unparseable/2026/11/24/06/20261124T060001Z-4711.bin"], ["ack", "ack"])
    assert expected == (objects, [delivery.settled for delivery in deliveries])
