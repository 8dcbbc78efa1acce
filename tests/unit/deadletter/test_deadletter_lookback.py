"""At start the writer recalls the objects written within the lookback, and only those."""

from __future__ import annotations

import gzip
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import count

from plowline_core.config import DeadLetterOptions
from plowline_core.errors import TransientError
from plowline_core.testing.clock import FixedClock
from plowline_core.testing.sinks import InMemoryBlobStore
from plowline_deadletter.layout import object_name, unparseable_name
from plowline_deadletter.lookback import Lookback, recall, recall_at_start
from plowline_deadletter.metrics import DeadLetterMetrics
from plowline_deadletter.writer import DeadLetterWriter

NOW = datetime(2026, 11, 22, 6, 4, 30, tzinfo=UTC)
PARSING = "com.snowplowanalytics.snowplow.badrows.loader_parsing_error/jsonschema-2"
IGLU = "com.snowplowanalytics.snowplow.badrows.loader_iglu_error/jsonschema-2"
ROW = (
    b'{"schema":"iglu:com.snowplowanalytics.snowplow.badrows/loader_parsing_error/jsonschema/2-0-0",'
    b'"data":{"n":%d}}'
)
TEN_MINUTES = Lookback(600, 60)


@dataclass
class Delivery:
    """A received message that records how it was settled."""

    data: bytes
    message_id: str = "m"
    publish_time: datetime = NOW
    settled: str | None = None

    def ack(self) -> None:
        """Record an ack."""
        self.settled = "ack"

    def nack(self) -> None:
        """Record a nack."""
        self.settled = "nack"


class RecordingStore(InMemoryBlobStore):
    """An in-memory bucket that records the prefixes listed and the objects read."""

    def __init__(self) -> None:
        super().__init__()
        self.listed: list[str] = []
        self.read: list[str] = []

    def list(self, prefix: str = "") -> list[str]:
        """Record the prefix, then list."""
        self.listed.append(prefix)
        return super().list(prefix)

    def get(self, name: str) -> bytes:
        """Record the name, then read."""
        self.read.append(name)
        return super().get(name)


def _writer(store: InMemoryBlobStore, metrics: DeadLetterMetrics) -> DeadLetterWriter:
    ids = count(1)
    options = DeadLetterOptions(window=60, max_rows=100)
    return DeadLetterWriter(
        store, FixedClock(NOW), options, metrics, new_id=lambda: f"new{next(ids)}"
    )


def _put(store: InMemoryBlobStore, partition: str, minutes_ago: float, *rows: int) -> str:
    start = NOW - timedelta(minutes=minutes_ago)
    name = object_name(partition, start, f"old{minutes_ago:g}", gzip=True)
    store.put(name, gzip.compress(b"".join(ROW % n + b"\n" for n in rows)))
    return name


def _written_now(store: InMemoryBlobStore) -> list[bytes]:
    """Return the lines of the objects the writer under test wrote (plain NDJSON)."""
    return [
        line
        for name, body in store.objects.items()
        if name.endswith(".ndjson") and "-new" in name
        for line in body.splitlines()
    ]


def test_recall_reads_only_the_objects_stamped_within_the_lookback(
    metrics: DeadLetterMetrics,
) -> None:
    """Objects 2 and 10 minutes old are read; 12 (past lookback + window) and 90 are not."""
    store = RecordingStore()
    recent = [_put(store, PARSING, 10, 1, 2), _put(store, IGLU, 2, 3)]
    _put(store, PARSING, 12, 4)
    _put(store, PARSING, 90, 5)
    recalled = recall(store, _writer(store, metrics), NOW, TEN_MINUTES)
    expected = ((2, 3, True), sorted(recent))
    assert expected == ((recalled.objects, recalled.rows, recalled.complete), sorted(store.read))


def test_recall_lists_only_the_hour_folders_the_lookback_covers(
    metrics: DeadLetterMetrics,
) -> None:
    """Each partition (unparseable too) is listed in the lookback's hours, never the whole bucket."""
    store = RecordingStore()
    _put(store, PARSING, 200, 1)
    _put(store, IGLU, 3, 2)
    store.put(unparseable_name(NOW - timedelta(minutes=1), "9"), b"\x00")
    recall(store, _writer(store, metrics), NOW, TEN_MINUTES)
    expected = sorted(
        f"{partition}/2026/11/22/{hour}/"
        for partition in (PARSING, IGLU, "unparseable")
        for hour in ("05", "06")
    )
    assert expected == sorted(store.listed)


def test_copies_of_recalled_bad_rows_are_acked_and_others_written(
    metrics: DeadLetterMetrics,
) -> None:
    """After the recall a redelivered row is acked unwritten; one older than the lookback is written."""
    store = InMemoryBlobStore()
    _put(store, PARSING, 5, 1)
    _put(store, PARSING, 90, 2)
    writer = _writer(store, metrics)
    recall(store, writer, NOW, TEN_MINUTES)
    recent, old = Delivery(ROW % 1), Delivery(ROW % 2)
    writer.receive(recent)
    writer.receive(old)
    writer.close()
    assert (recent.settled, old.settled, _written_now(store)) == ("ack", "ack", [ROW % 2])


def test_a_recalled_unparseable_message_republished_is_acked_unwritten(
    metrics: DeadLetterMetrics,
) -> None:
    """An unparseable object's bytes are recalled whole: a copy under a new id adds no object."""
    store = InMemoryBlobStore()
    store.put(unparseable_name(NOW - timedelta(minutes=3), "1"), b"not json\n")
    writer = _writer(store, metrics)
    recall(store, writer, NOW, TEN_MINUTES)
    copy = Delivery(b"not json", message_id="2")
    writer.receive(copy)
    writer.close()
    assert (copy.settled, len(store.objects)) == ("ack", 1)


def test_a_failed_read_starts_the_writer_without_the_memory_and_says_so(
    metrics: DeadLetterMetrics,
) -> None:
    """The bucket refuses reads: the recall reports the error, the metric is 1, writes go on."""
    store = InMemoryBlobStore()
    _put(store, PARSING, 5, 1)
    store.fail_with = TransientError("503 after retries")
    writer = _writer(store, metrics)
    recalled = recall_at_start(store, writer, NOW, TEN_MINUTES, metrics, lambda: 0.0)
    store.fail_with = None
    copy = Delivery(ROW % 1)
    writer.receive(copy)
    writer.close()
    expected = (False, "listing the bucket failed: 503 after retries", 1.0, "ack", 2)
    actual = (
        recalled.complete,
        recalled.error,
        metrics.lookback_incomplete._value.get(),
        copy.settled,
        len(store.objects),
    )
    assert expected == actual


def test_a_failed_object_read_keeps_what_was_recalled_before(
    metrics: DeadLetterMetrics,
) -> None:
    """The second object cannot be read: the first one's rows are remembered, the error named."""
    store = RecordingStore()
    _put(store, PARSING, 8, 1)
    second = _put(store, PARSING, 4, 2)

    def get(name: str) -> bytes:
        if name == second:
            raise TransientError("timeout")
        return InMemoryBlobStore.get(store, name)

    store.get = get  # type: ignore[method-assign]
    writer = _writer(store, metrics)
    recalled = recall(store, writer, NOW, TEN_MINUTES)
    first_copy = Delivery(ROW % 1)
    writer.receive(first_copy)
    expected = ((1, 1), f"reading {second} failed: timeout", "ack")
    assert expected == ((recalled.objects, recalled.rows), recalled.error, first_copy.settled)


def test_an_object_that_is_not_whole_gzip_is_skipped(metrics: DeadLetterMetrics) -> None:
    """A truncated .gz object is skipped and counted; the others are recalled."""
    store = InMemoryBlobStore()
    _put(store, PARSING, 5, 1)
    store.put(object_name(IGLU, NOW, "cut", gzip=True), gzip.compress(ROW % 2 + b"\n")[:-6])
    recalled = recall(store, _writer(store, metrics), NOW, TEN_MINUTES)
    expected = (1, 1, 1, True)
    assert expected == (recalled.objects, recalled.rows, recalled.skipped, recalled.complete)


def test_a_lookback_of_zero_reads_nothing(metrics: DeadLetterMetrics) -> None:
    """--dedupLookback 0: the bucket is not touched (a refusing bucket raises nothing)."""
    store = InMemoryBlobStore()
    store.fail_with = TransientError("must not be called")
    recalled = recall_at_start(
        store, _writer(store, metrics), NOW, Lookback(0, 60), metrics, lambda: 0.0
    )
    assert (recalled.objects, recalled.complete) == (0, True)
