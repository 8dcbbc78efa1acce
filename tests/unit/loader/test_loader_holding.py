"""The driver's holding of parked deliveries: leased, written once, acked whole, bounded."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from plowline_cloud.pubsub.pulled import PulledMessage
from plowline_core.errors import TransientError
from plowline_core.event.compressed import Compression, write_batch
from plowline_loader.batch.outcome import BatchOutcome
from plowline_loader.source.holding import Holding
from plowline_loader.source.settlement import Parcel

pytestmark = pytest.mark.unit

PATH = "projects/p/subscriptions/in"


class Calls:
    """A subscription that records every settling call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[str, ...], int]] = []

    def ack(self, ack_ids: Sequence[str]) -> None:
        self.calls.append(("ack", tuple(ack_ids), 0))

    def nack(self, ack_ids: Sequence[str]) -> None:
        self.calls.append(("nack", tuple(ack_ids), 0))

    def modack(self, ack_ids: Sequence[str], seconds: int) -> None:
        self.calls.append(("modack", tuple(ack_ids), seconds))


class Writer:
    """Writes every record it is given, once the schema exists; else holds them."""

    def __init__(self) -> None:
        self.written: list[bytes] = []
        self.schema = False
        self.failing = False

    def process(self, messages: Sequence[Any]) -> BatchOutcome:
        if self.failing:
            raise TransientError("insert: 503")
        if not self.schema:
            return BatchOutcome(held_ids=frozenset(m.message_id for m in messages))
        self.written.extend(m.data for m in messages)
        return BatchOutcome(len(messages), len(messages))


def _parcel(name: str, records: list[bytes], durable: frozenset[int]) -> Parcel:
    data = write_batch(records, Compression.GZIP)
    return Parcel(PulledMessage(f"ack-{name}", PATH, name, 0, data), durable)


def _holding(calls: Calls, writer: Writer, max_bytes: int = 1 << 20) -> Holding:
    return Holding(lambda _path: calls, lambda: writer, max_bytes=max_bytes, background=False)


def test_a_parked_delivery_writes_only_its_waiting_records_then_is_acked() -> None:
    """Records 0 and 2 durable, 1 held: once the schema exists only record 1 is written, and
    the delivery is acked; until then it is only leased."""
    calls, writer = Calls(), Writer()
    holding = _holding(calls, writer)
    holding.take([_parcel("b", [b"r0", b"r1", b"r2"], frozenset({0, 2}))])
    holding.retry_due(everything=True)
    writer.schema = True

    holding.retry_due(everything=True)

    expected = (
        [b"r1"],
        [("modack", ("ack-b",), 60), ("ack", ("ack-b",), 0)],
        0,
    )
    assert expected == (writer.written, calls.calls, holding.parked)


def test_a_transient_failure_keeps_the_delivery_parked() -> None:
    """The insert failing: nothing acked, nothing handed back, the delivery still kept."""
    calls, writer = Calls(), Writer()
    holding = _holding(calls, writer)
    holding.take([_parcel("b", [b"r0", b"r1"], frozenset({0}))])
    writer.schema, writer.failing = True, True

    holding.retry_due(everything=True)

    assert (calls.calls, holding.parked) == ([("modack", ("ack-b",), 60)], 1)


def test_past_its_bound_a_delivery_with_nothing_written_waits_in_pubsub() -> None:
    """A full holding hands back (for the hold's retry) only what has nothing written; a
    delivery with written records is kept all the same."""
    calls, writer = Calls(), Writer()
    holding = _holding(calls, writer, max_bytes=1)
    holding.take(
        [_parcel("none", [b"r0"], frozenset()), _parcel("some", [b"r0", b"r1"], frozenset({0}))]
    )

    expected = ([("modack", ("ack-some",), 60), ("modack", ("ack-none",), 60)], 1, 1)
    assert expected == (calls.calls, holding.parked, holding.handed_back)


def test_a_stop_hands_back_what_is_still_parked() -> None:
    """release() at a stop nacks every delivery still kept, and keeps none."""
    calls, writer = Calls(), Writer()
    holding = _holding(calls, writer)
    holding.take([_parcel("b", [b"r0", b"r1"], frozenset({0}))])

    released = holding.release()

    assert (released, calls.calls[-1], holding.parked) == (1, ("nack", ("ack-b",), 0), 0)


def test_a_delivery_parked_again_after_its_lease_lapsed_is_kept_once() -> None:
    """The same message parked under a new ack id (its lease lapsed) is kept once, under the
    live ack id, so its held record is written once and the live delivery acked."""
    calls, writer = Calls(), Writer()
    holding = _holding(calls, writer)
    first = _parcel("b", [b"r0", b"r1"], frozenset({0}))
    again = Parcel(first.delivery._replace(ack_id="ack-b-again"), frozenset({0}))
    holding.take([first])
    holding.take([again])
    writer.schema = True

    holding.retry_due(everything=True)

    assert (
        writer.written,
        calls.calls[-1],
        holding.parked,
    ) == ([b"r1"], ("ack", ("ack-b-again",), 0), 0)
