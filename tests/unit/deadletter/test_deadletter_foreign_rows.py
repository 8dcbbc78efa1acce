"""A bad row published by someone other than the loader: bounded labels, a name GCS takes."""

from __future__ import annotations

from datetime import UTC, datetime
from itertools import count

import pytest
from plowline_cloud.metrics import MetricsRegistry
from plowline_core.config import DeadLetterOptions
from plowline_core.errors import PermanentError
from plowline_core.testing.clock import FixedClock
from plowline_core.testing.sinks import InMemoryBlobStore
from plowline_deadletter.layout import PARTITION_MAX_BYTES, partition_of
from plowline_deadletter.metrics import DeadLetterMetrics
from plowline_deadletter.writer import DeadLetterWriter

START = datetime(2026, 11, 22, 5, 13, tzinfo=UTC)
GCS_NAME_MAX_BYTES = 1024


class GcsNamedStore(InMemoryBlobStore):
    """A store that refuses an object name over 1,024 bytes of UTF-8, as GCS answers 400."""

    def put(self, name: str, data: bytes, content_type: str = "application/x-ndjson") -> None:
        """Refuse a name GCS would refuse; store anything else."""
        if len(name.encode()) > GCS_NAME_MAX_BYTES:
            raise PermanentError(f"400 invalid object name ({len(name.encode())} bytes)")
        super().put(name, data, content_type)


class Message:
    """A received message that records how it was settled."""

    def __init__(self, data: bytes, message_id: str) -> None:
        self.data = data
        self.message_id = message_id
        self.publish_time = START
        self.settled: str | None = None

    def ack(self) -> None:
        """Record an ack."""
        self.settled = "ack"

    def nack(self) -> None:
        """Record a nack."""
        self.settled = "nack"


def _row(vendor: str, name: str = "thing", model: int = 1) -> bytes:
    return f'{{"schema":"iglu:{vendor}/{name}/jsonschema/{model}-0-0","data":{{}}}}'.encode()


def _write(*rows: bytes) -> tuple[GcsNamedStore, list[Message], MetricsRegistry]:
    store, registry = GcsNamedStore(), MetricsRegistry("deadletter-foreign-test")
    ids = count(1)
    writer = DeadLetterWriter(
        store,
        FixedClock(START),
        DeadLetterOptions(window=60, max_rows=100),
        DeadLetterMetrics.create(registry),
        new_id=lambda: f"id{next(ids)}",
    )
    messages = [Message(row, f"m{n}") for n, row in enumerate(rows)]
    for message in messages:
        writer.receive(message)
    writer.close()
    return store, messages, registry


def test_a_bad_row_with_a_vendor_over_1kb_is_written_and_acked() -> None:
    """A 2,000-character vendor gets an object GCS takes, and its message is acked."""
    store, messages, _ = _write(_row("com." + "a" * 2000))
    names = list(store.objects)
    assert ([m.settled for m in messages], len(names)) == (["ack"], 1)
    assert len(names[0].encode()) <= GCS_NAME_MAX_BYTES


@pytest.mark.parametrize(
    ("first", "second"),
    [
        pytest.param("com." + "a" * 2000, "com." + "a" * 1999 + "b", id="differ-at-the-end"),
        pytest.param("com." + "a" * 2000, "com." + "a" * 2001, id="differ-in-length"),
    ],
)
def test_shortened_partitions_stay_distinct_and_stable(first: str, second: str) -> None:
    """Two long vendors that share a head keep two folders, each the same on every call."""
    a, b = partition_of(_row(first)), partition_of(_row(second))
    assert (a != b, a, b) == (True, partition_of(_row(first)), partition_of(_row(second)))
    assert max(len(a.encode()), len(b.encode())) <= PARTITION_MAX_BYTES


def test_a_short_partition_is_kept_as_it_is() -> None:
    """An ordinary partition keeps its readable name."""
    expected = "com.acme.thing/jsonschema-1"
    assert expected == partition_of(_row("com.acme"))


def test_metric_labels_stay_a_closed_set() -> None:
    """Made-up schema keys share the label ``other``; known bad-row types keep their own."""
    known = b'{"schema":"iglu:com.snowplowanalytics.snowplow.badrows/loader_iglu_error/jsonschema/2-0-0","data":{}}'
    _, _, registry = _write(*[_row(f"com.spam{n}") for n in range(50)], known)
    labels = {
        sample.labels["partition"]
        for metric in registry.registry.collect()
        for sample in metric.samples
        if sample.name.endswith("deadletter_rows_written_total")
    }
    expected = {"other", "com.snowplowanalytics.snowplow.badrows.loader_iglu_error/jsonschema-2"}
    assert expected == labels
