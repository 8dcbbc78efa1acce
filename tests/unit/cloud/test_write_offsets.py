"""Appends settled by offset: a lost answer is asked again at the same offset, never doubled."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from google.api_core import exceptions as gexc
from plowline_cloud.write_api_offsets import (
    NotApplied,
    Outcome,
    StreamCursor,
    StreamLost,
    settle_by_offset,
)


class CommittedStream:
    """An in-memory COMMITTED stream, as BigQuery keeps one: rows land only at its end.

    ``answers``: per call, how many responses come back before the connection breaks
    (every request of the call is applied first, as with a stream broken after apply);
    calls past the list are answered in full. ``refuse``: batches refused once (row errors).
    """

    def __init__(
        self,
        rows: Sequence[str] = (),
        answers: Sequence[int] = (),
        refuse: Sequence[str] = (),
        finalized: Outcome = None,
    ) -> None:
        self.rows = list(rows)
        self.answers = list(answers)
        self.refuse = set(refuse)
        self.finalized = finalized  # the error every append gets once finalized
        self.calls = 0

    def exchange(
        self, batches: Sequence[list[str]], offsets: Sequence[int]
    ) -> tuple[list[Outcome], int]:
        """Apply each request at its offset; answer as many as this call answers."""
        self.calls += 1
        outcomes = [
            self._append(batch, offset) for batch, offset in zip(batches, offsets, strict=True)
        ]
        answered = self.answers.pop(0) if self.answers else len(batches)
        lost: Outcome = gexc.ServiceUnavailable("stream broken")
        return outcomes[:answered] + [lost] * (len(batches) - answered), answered

    def _append(self, batch: list[str], offset: int) -> Outcome:
        if self.finalized is not None:
            return self.finalized
        if offset < len(self.rows):
            return gexc.AlreadyExists(f"offset {offset} already exists")
        if offset > len(self.rows):
            return gexc.OutOfRange(f"offset {offset} is past the end {len(self.rows)}")
        if batch[0] in self.refuse:
            self.refuse.discard(batch[0])
            return gexc.InvalidArgument("row errors")
        self.rows.extend(batch)
        return None


BATCHES = [["a", "b"], ["c", "d", "e"], ["f"]]


def _pauses(count: int = 3) -> list[None]:
    return [None] * count


@pytest.mark.parametrize(
    "answers",
    [
        pytest.param([], id="all-answered"),
        pytest.param([0], id="broken-before-any-answer"),
        pytest.param([1], id="broken-after-the-first-answer"),
        pytest.param([0, 0, 1], id="broken-again-on-resends"),
    ],
)
def test_every_request_lands_once_however_the_answers_are_lost(answers: list[int]) -> None:
    """Unanswered requests sent again at their offsets: each row once, the cursor at the end."""
    stream = CommittedStream(answers=answers)
    cursor = StreamCursor("s")

    outcomes = settle_by_offset(cursor, BATCHES, stream.exchange, _pauses())

    assert (outcomes, stream.rows, cursor.next_offset) == ([None] * 3, list("abcdef"), 6)


def test_requests_behind_a_refused_one_are_marked_not_applied() -> None:
    """A refused request: the cursor stops before it, the one after it is to be sent again."""
    stream = CommittedStream(refuse=["c"])
    cursor = StreamCursor("s")

    outcomes = settle_by_offset(cursor, BATCHES, stream.exchange, _pauses())

    assert (
        [type(outcome) for outcome in outcomes],
        stream.rows,
        cursor.next_offset,
    ) == ([type(None), gexc.InvalidArgument, NotApplied], ["a", "b"], 2)


def test_already_exists_on_a_first_send_is_a_lost_stream_not_a_success() -> None:
    """Rows the cursor does not know are on the stream: StreamLost, never a silent skip."""
    stream = CommittedStream(rows=["x", "y"])
    cursor = StreamCursor("s")

    with pytest.raises(StreamLost) as raised:
        settle_by_offset(cursor, BATCHES[:1], stream.exchange, _pauses())

    assert (raised.value.doubtful, stream.rows) == (False, ["x", "y"])


def test_rows_landed_behind_a_wrong_cursor_leave_the_stream_in_doubt() -> None:
    """The cursor behind the stream's end, later requests land: StreamLost, doubtful."""
    stream = CommittedStream(rows=["x", "y"])
    cursor = StreamCursor("s")

    with pytest.raises(StreamLost) as raised:
        settle_by_offset(cursor, BATCHES, stream.exchange, _pauses())

    assert (raised.value.doubtful, stream.rows) == (True, list("xycdef"))


def test_requests_unanswered_after_every_pause_leave_the_stream_in_doubt() -> None:
    """No answer on the first send nor on three resends: StreamLost, doubtful."""
    stream = CommittedStream(answers=[0, 0, 0, 0])
    cursor = StreamCursor("s")

    with pytest.raises(StreamLost) as raised:
        settle_by_offset(cursor, BATCHES, stream.exchange, _pauses())

    assert (raised.value.doubtful, stream.calls) == (True, 4)


@pytest.mark.parametrize(
    "refusal",
    [
        pytest.param(gexc.FailedPrecondition("Stream is FINALIZED"), id="bqemulator"),
        pytest.param(
            gexc.InvalidArgument("Stream is finalized. Entity: projects/p/streams/s"),
            id="bigquery",
        ),
        pytest.param(gexc.NotFound("Requested entity was not found."), id="not-found"),
    ],
)
def test_a_finalized_stream_is_lost_with_nothing_in_doubt(refusal: Exception) -> None:
    """Appends refused because the stream is finalized or gone: StreamLost, not doubtful."""
    stream = CommittedStream(finalized=refusal)
    cursor = StreamCursor("s")

    with pytest.raises(StreamLost) as raised:
        settle_by_offset(cursor, BATCHES, stream.exchange, _pauses())

    assert (raised.value.doubtful, cursor.next_offset) == (False, 0)


def test_a_schema_refusal_is_not_a_lost_stream() -> None:
    """INVALID_ARGUMENT about the schema is the request's refusal: the stream stays."""
    refusal = gexc.InvalidArgument("Input schema has more fields than BigQuery schema")
    stream = CommittedStream(finalized=refusal)
    cursor = StreamCursor("s")

    outcomes = settle_by_offset(cursor, BATCHES, stream.exchange, _pauses())

    assert ([type(o) for o in outcomes], cursor.next_offset) == ([gexc.InvalidArgument] * 3, 0)
