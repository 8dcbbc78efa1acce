"""The writer turns buffered bad rows into objects and acks only what was written."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import count

import pytest
from plowline_core.config import DeadLetterOptions
from plowline_core.errors import TransientError
from plowline_core.testing.clock import FixedClock
from plowline_core.testing.sinks import InMemoryBlobStore
from plowline_deadletter.identity import identity
from plowline_deadletter.metrics import DeadLetterMetrics
from plowline_deadletter.writer import DeadLetterWriter

START = datetime(2026, 11, 22, 5, 13, tzinfo=UTC)
PUBLISHED = datetime(2026, 11, 22, 4, 59, 58, tzinfo=UTC)
ROW = (
    b'{"schema":"iglu:com.snowplowanalytics.snowplow.badrows/loader_iglu_error/jsonschema/2-0-0",'
    b'"data":{"n":%d}}'
)


_message_ids = count(1)


@dataclass
class FakeMessage:
    """A received message that records how it was settled (ids ``m1``, ``m2``… by default)."""

    data: bytes
    settled: str | None = None
    message_id: str = field(default_factory=lambda: f"m{next(_message_ids)}")
    publish_time: datetime = PUBLISHED

    def ack(self) -> None:
        """Record an ack."""
        self.settled = "ack"

    def nack(self) -> None:
        """Record a nack."""
        self.settled = "nack"


class FailingOn(InMemoryBlobStore):
    """A store whose writes of one object name fail with a TransientError (a 503)."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name

    def put(self, name: str, data: bytes, content_type: str = "application/x-ndjson") -> None:
        """Refuse ``self.name``; store anything else."""
        if name == self.name:
            raise TransientError(f"{name}: 503")
        super().put(name, data, content_type)


def _writer(
    store: InMemoryBlobStore, clock: FixedClock, metrics: DeadLetterMetrics, max_rows: int = 100
) -> DeadLetterWriter:
    ids = count(1)
    options = DeadLetterOptions(window=60, max_rows=max_rows)
    return DeadLetterWriter(store, clock, options, metrics, new_id=lambda: f"id{next(ids)}")


@pytest.fixture
def clock() -> FixedClock:
    """A clock at a window start."""
    return FixedClock(START)


def test_messages_wait_unacked_until_their_window_closes(
    clock: FixedClock, metrics: DeadLetterMetrics
) -> None:
    """Nothing is written or acked while the window is open."""
    store = InMemoryBlobStore()
    writer = _writer(store, clock, metrics)
    message = FakeMessage(ROW % 1)
    writer.receive(message)
    writer.tick()
    expected: tuple[dict[str, bytes], str | None] = ({}, None)
    assert expected == (store.objects, message.settled)


def test_a_closed_window_writes_one_object_then_acks(
    clock: FixedClock, metrics: DeadLetterMetrics
) -> None:
    """After the window the rows are in one object and every message is acked."""
    store = InMemoryBlobStore()
    writer = _writer(store, clock, metrics)
    messages = [FakeMessage(ROW % n) for n in range(3)]
    for message in messages:
        writer.receive(message)
    clock.advance(60)
    writer.tick()
    name = "com.snowplowanalytics.snowplow.badrows.loader_iglu_error/jsonschema-2/2026/11/22/05/20261122T051300Z-id1.ndjson"
    expected = {name: b"".join(m.data + b"\n" for m in messages)}
    assert (expected, ["ack"] * 3) == (store.objects, [m.settled for m in messages])


def test_unparseable_messages_land_as_they_came(
    clock: FixedClock, metrics: DeadLetterMetrics
) -> None:
    """A message that is not self-describing JSON is filed under unparseable/ unchanged."""
    store = InMemoryBlobStore()
    writer = _writer(store, clock, metrics)
    writer.receive(FakeMessage(b"\x00 garbage", message_id="17"))
    writer.close()
    expected = {"unparseable/2026/11/22/04/20261122T045958Z-17.bin": b"\x00 garbage"}
    assert expected == store.objects


def test_unparseable_messages_with_newlines_round_trip_byte_for_byte(
    clock: FixedClock, metrics: DeadLetterMetrics
) -> None:
    """Each unparseable message, newlines and all, is one object holding exactly its bytes."""
    store = InMemoryBlobStore()
    writer = _writer(store, clock, metrics)
    messages = [
        FakeMessage(b"first\nsecond"),
        FakeMessage(b"third\r\n\n"),
        FakeMessage(b'{"schema":"iglu:a/b/jsonschema/1-0-0",\n"data":{}}'),
        FakeMessage(b""),
    ]
    for message in messages:
        writer.receive(message)
    writer.close()
    expected = (
        [m.data for m in messages],
        ["application/octet-stream"] * 4,
        ["ack"] * 4,
    )
    actual = (
        list(store.objects.values()),
        list(store.content_types.values()),
        [m.settled for m in messages],
    )
    assert expected == actual


def test_a_failed_unparseable_write_nacks_only_its_message(
    clock: FixedClock, metrics: DeadLetterMetrics
) -> None:
    """When one unparseable object cannot be written, only that message comes back."""
    store = FailingOn("unparseable/2026/11/22/04/20261122T045958Z-1.bin")
    writer = _writer(store, clock, metrics)
    first, second = FakeMessage(b"one\ntwo", message_id="1"), FakeMessage(b"three", message_id="2")
    writer.receive(first)
    writer.receive(second)
    writer.close()
    expected = ("nack", "ack", b"three")
    actual = (
        first.settled,
        second.settled,
        store.objects["unparseable/2026/11/22/04/20261122T045958Z-2.bin"],
    )
    assert expected == actual


def test_max_rows_writes_before_the_window_ends(
    clock: FixedClock, metrics: DeadLetterMetrics
) -> None:
    """A full buffer is written at once."""
    store = InMemoryBlobStore()
    writer = _writer(store, clock, metrics, max_rows=2)
    messages = [FakeMessage(ROW % n) for n in range(2)]
    for message in messages:
        writer.receive(message)
    expected = (1, ["ack", "ack"])
    assert expected == (len(store.objects), [m.settled for m in messages])


def test_a_failed_write_nacks_its_messages(clock: FixedClock, metrics: DeadLetterMetrics) -> None:
    """When the bucket refuses, the messages come back instead of being acked."""
    store = InMemoryBlobStore()
    store.fail_with = TransientError("bucket down")
    writer = _writer(store, clock, metrics)
    message = FakeMessage(ROW % 1)
    writer.receive(message)
    writer.close()
    expected: tuple[dict[str, bytes], str] = ({}, "nack")
    assert expected == (store.objects, message.settled)


def test_close_flushes_and_then_refuses(clock: FixedClock, metrics: DeadLetterMetrics) -> None:
    """Shutdown writes what is buffered; a message arriving afterwards is nacked."""
    store = InMemoryBlobStore()
    writer = _writer(store, clock, metrics)
    early, late = FakeMessage(ROW % 1), FakeMessage(ROW % 2)
    writer.receive(early)
    writer.close()
    writer.receive(late)
    expected = (1, "ack", "nack")
    assert expected == (len(store.objects), early.settled, late.settled)


def test_a_duplicate_unparseable_delivery_is_acked_without_a_second_object(
    clock: FixedClock, metrics: DeadLetterMetrics
) -> None:
    """The same unparseable message delivered twice: one object, both deliveries acked."""
    store = InMemoryBlobStore()
    writer = _writer(store, clock, metrics)
    first, again = (
        FakeMessage(b"not json", message_id="42"),
        FakeMessage(b"not json", message_id="42"),
    )
    writer.receive(first)
    writer.tick()
    clock.advance(120)
    writer.receive(again)
    writer.close()
    expected = (["unparseable/2026/11/22/04/20261122T045958Z-42.bin"], "ack", "ack")
    assert expected == (list(store.objects), first.settled, again.settled)


def test_a_copy_of_a_buffered_bad_row_is_written_once_and_acked_with_it(
    clock: FixedClock, metrics: DeadLetterMetrics
) -> None:
    """A second delivery while the first is buffered: one line, acked only when written."""
    store = InMemoryBlobStore()
    writer = _writer(store, clock, metrics)
    first, copy = FakeMessage(ROW % 1, message_id="7"), FakeMessage(ROW % 1, message_id="7")
    writer.receive(first)
    writer.receive(copy)
    waiting = copy.settled
    writer.close()
    lines = [line for body in store.objects.values() for line in body.splitlines()]
    assert (waiting, lines, first.settled, copy.settled) == (None, [ROW % 1], "ack", "ack")


def test_a_copy_of_a_written_bad_row_is_acked_without_a_second_line(
    clock: FixedClock, metrics: DeadLetterMetrics
) -> None:
    """A delivery after the object was written (a late ack's redelivery): acked, nothing added."""
    store = InMemoryBlobStore()
    writer = _writer(store, clock, metrics, max_rows=1)
    first, late = FakeMessage(ROW % 1, message_id="8"), FakeMessage(ROW % 1, message_id="8")
    writer.receive(first)
    writer.receive(late)
    writer.close()
    assert (len(store.objects), first.settled, late.settled) == (1, "ack", "ack")


def test_a_failed_write_nacks_the_copies_held_with_its_rows(
    clock: FixedClock, metrics: DeadLetterMetrics
) -> None:
    """The bucket refuses: the row and its copy are nacked; the next delivery is buffered anew."""
    store = InMemoryBlobStore()
    writer = _writer(store, clock, metrics)
    first, copy = FakeMessage(ROW % 1, message_id="9"), FakeMessage(ROW % 1, message_id="9")
    writer.receive(first)
    writer.receive(copy)
    store.fail_with = TransientError("bucket down")
    writer.tick()
    clock.advance(60)
    writer.tick()
    store.fail_with = None
    again = FakeMessage(ROW % 1, message_id="9")
    writer.receive(again)
    writer.close()
    assert (first.settled, copy.settled, again.settled, len(store.objects)) == (
        "nack",
        "nack",
        "ack",
        1,
    )


def test_a_republished_bad_row_held_beside_its_first_copy_is_one_line(
    clock: FixedClock, metrics: DeadLetterMetrics
) -> None:
    """The loader published a bad row again (new message id, same bytes): one line, both acked."""
    store = InMemoryBlobStore()
    writer = _writer(store, clock, metrics)
    first, republished = FakeMessage(ROW % 1, message_id="10"), FakeMessage(ROW % 1 + b"\n")
    writer.receive(first)
    writer.receive(republished)
    writer.close()
    lines = [line for body in store.objects.values() for line in body.splitlines()]
    assert (lines, first.settled, republished.settled) == ([ROW % 1], "ack", "ack")


def test_a_republished_bad_row_written_lately_is_acked_without_a_second_line(
    clock: FixedClock, metrics: DeadLetterMetrics
) -> None:
    """A republished copy arriving after the object was written is acked, nothing added."""
    store = InMemoryBlobStore()
    writer = _writer(store, clock, metrics, max_rows=1)
    first, republished = FakeMessage(ROW % 1, message_id="11"), FakeMessage(ROW % 1)
    writer.receive(first)
    clock.advance(300)
    writer.receive(republished)
    writer.close()
    assert (len(store.objects), republished.settled) == (1, "ack")


def test_a_republished_unparseable_message_is_one_object(
    clock: FixedClock, metrics: DeadLetterMetrics
) -> None:
    """The same unparseable bytes under two message ids: one object, both acked."""
    store = InMemoryBlobStore()
    writer = _writer(store, clock, metrics)
    first, republished = FakeMessage(b"not json", message_id="12"), FakeMessage(b"not json")
    writer.receive(first)
    writer.tick()
    writer.receive(republished)
    writer.close()
    expected = (["unparseable/2026/11/22/04/20261122T045958Z-12.bin"], "ack", "ack")
    assert expected == (list(store.objects), first.settled, republished.settled)


def test_a_bad_row_recalled_at_start_is_acked_without_a_write(
    clock: FixedClock, metrics: DeadLetterMetrics
) -> None:
    """A redelivery of a bad row an earlier writer wrote (its identity recalled) is acked at once."""
    store = InMemoryBlobStore()
    writer = _writer(store, clock, metrics)
    remembered = writer.recall([identity(ROW % 1)])
    again, other = FakeMessage(ROW % 1), FakeMessage(ROW % 2)
    writer.receive(again)
    writer.receive(other)
    settled_at_once = again.settled
    writer.close()
    lines = [line for body in store.objects.values() for line in body.splitlines()]
    assert (remembered, settled_at_once, lines) == (1, "ack", [ROW % 2])
