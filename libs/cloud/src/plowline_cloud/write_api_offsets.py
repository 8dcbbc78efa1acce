"""Offsets on a COMMITTED write stream: an append whose response was lost lands once.

The Storage Write API appends a request that carries an ``offset`` only at that offset:
at the stream's end it is appended; before it BigQuery answers ``ALREADY_EXISTS`` (those
rows are on the stream already); past it ``OUT_OF_RANGE`` (nothing appended). So a
writer that alone appends to a stream, and knows its end (``StreamCursor``), can send
an unanswered request again, unchanged and at the same offset, and learn its fate: OK
(it had not landed, now it has) or ALREADY_EXISTS (it had). Nothing lands twice.

``settle_by_offset`` settles one AppendRows exchange this way:

1. Each request carries ``cursor.next_offset`` plus the rows of the requests before it.
2. Requests left unanswered (the connection broke) are sent again, at their offsets, after
   a pause, until each is answered or the pauses run out (``StreamLost``, in doubt).
   When an answered request before them was refused, they lay past the stream's end:
   not applied, nothing to ask.
3. The cursor moves past the leading run of applied requests. A refused request's
   successors got ``OUT_OF_RANGE``: they become ``NotApplied`` (send again, new offset).

Notes:
    Offsets are not accepted on the ``_default`` stream: this is why ``WriteApiRowSink``
    appends to a COMMITTED stream of its own (``write_api_committed``). Only the exact
    request first sent at an offset may read ALREADY_EXISTS as "applied": a first send
    answered so, or ``OUT_OF_RANGE`` on the first unapplied request, means the cursor is
    wrong (another writer, a stream reset): ``StreamLost``, never a silent skip.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence, Sized
from dataclasses import dataclass
from typing import TypeVar

from google.api_core import exceptions as gexc
from plowline_core.errors import TransientError

Batch = TypeVar("Batch", bound=Sized)
Outcome = Exception | None
Exchange = Callable[[Sequence[Batch], Sequence[int]], tuple[list[Outcome], int]]
"""Send requests at offsets on one connection: per request None (appended) or the error
that refused it, and how many were answered (the first ``answered`` outcomes are real)."""

_GONE_WORDS = ("finalized", "not found", "does not exist", "doesn't exist")


@dataclass(slots=True)
class StreamCursor:
    """A COMMITTED stream only one writer appends to, and the offset its next row gets."""

    stream: str
    next_offset: int = 0


class StreamLost(TransientError):
    """The stream cannot take this writer's appends any more: open another.

    Attributes:
        doubtful: True when a request's fate stayed unknown (its rows may be on the
            stream); False when every request of the call is known applied or not.
    """

    def __init__(self, message: str, *, doubtful: bool) -> None:
        super().__init__(message)
        self.doubtful = doubtful


class NotApplied(Exception):
    """A request refused because one before it was: not on the stream, send it again."""


def offsets_of(start: int, batches: Sequence[Sized]) -> list[int]:
    """Return each request's offset when the requests follow each other from ``start``."""
    offsets: list[int] = []
    for batch in batches:
        offsets.append(start)
        start += len(batch)
    return offsets


def settle_by_offset(
    cursor: StreamCursor,
    batches: Sequence[Batch],
    exchange: Exchange[Batch],
    pauses: Iterable[None],
) -> list[Outcome]:
    """Send ``batches`` from the cursor, resolve unanswered ones, move the cursor.

    Returns, per request: None when it is on the stream (exactly once), else the error
    that refused it (``NotApplied`` when it only followed a refused request).

    Raises:
        StreamLost: the stream is gone or its offsets are not the cursor's, or requests
            stayed unanswered after every pause (``doubtful``).
    """
    offsets = offsets_of(cursor.next_offset, batches)
    outcomes, answered = exchange(batches, offsets)
    resent: set[int] = set()
    if answered < len(batches):
        ended = outcomes[answered]
        if _gone(ended):
            _advance(cursor, batches, offsets, outcomes[:answered], set())
            raise StreamLost(f"{cursor.stream}: {ended}", doubtful=False)
        if all(outcome is None for outcome in outcomes[:answered]):
            pending = list(range(answered, len(batches)))
            outcomes[answered:] = _resend(cursor, batches, offsets, pending, exchange, pauses)
            resent = set(pending)
        else:  # behind a refused request: their offsets lay past the stream's end
            behind = len(batches) - answered
            outcomes[answered:] = [NotApplied("behind a refused append")] * behind
    return _advance(cursor, batches, offsets, outcomes, resent)


def _resend(
    cursor: StreamCursor,
    batches: Sequence[Batch],
    offsets: Sequence[int],
    pending: list[int],
    exchange: Exchange[Batch],
    pauses: Iterable[None],
) -> list[Outcome]:
    """Send unanswered requests again at their offsets until each is answered."""
    settled: dict[int, Outcome] = {}
    for _ in pauses:
        answers, answered = exchange([batches[i] for i in pending], [offsets[i] for i in pending])
        done = 0
        for index, outcome in zip(pending[:answered], answers[:answered], strict=True):
            if outcome is not None and not isinstance(
                outcome, gexc.AlreadyExists | gexc.OutOfRange
            ):
                break  # refused for another reason: the first send's fate is still unknown
            settled[index] = outcome
            done += 1
        pending = pending[done:]
        if not pending:
            return [settled[i] for i in sorted(settled)]
    raise StreamLost(
        f"{cursor.stream}: {len(pending)} appends at offset {offsets[pending[0]]} and after "
        "stayed unanswered; their rows may be on the stream",
        doubtful=True,
    )


def _advance(
    cursor: StreamCursor,
    batches: Sequence[Sized],
    offsets: Sequence[int],
    outcomes: Sequence[Outcome],
    resent: set[int],
) -> list[Outcome]:
    """Move the cursor past the leading applied requests; check the rest agree."""
    settled = list(outcomes)
    first = 0
    while first < len(outcomes) and _applied(outcomes[first], first in resent):
        settled[first] = None
        first += 1
    if first < len(offsets):
        cursor.next_offset = offsets[first]
    elif offsets:
        cursor.next_offset = offsets[-1] + len(batches[-1])
    if first == len(outcomes):
        return settled
    for index in range(first + 1, len(outcomes)):
        outcome = outcomes[index]
        if outcome is None or isinstance(outcome, gexc.AlreadyExists):
            # Only when the cursor is wrong: rows of this call landed behind a refusal.
            raise StreamLost(
                f"{cursor.stream}: offset {offsets[index]} appended behind a refused append",
                doubtful=True,
            )
        if isinstance(outcome, gexc.OutOfRange):
            settled[index] = NotApplied(str(outcome))
    refusal = outcomes[first]
    if isinstance(refusal, gexc.AlreadyExists | gexc.OutOfRange) or _gone(refusal):
        raise StreamLost(
            f"{cursor.stream}: offset {offsets[first]} refused ({refusal}); "
            "the stream's end is not where this writer left it",
            doubtful=False,
        )
    return settled


def _applied(outcome: Outcome, resent: bool) -> bool:
    return outcome is None or (resent and isinstance(outcome, gexc.AlreadyExists))


def _gone(error: Outcome) -> bool:
    """Say whether ``error`` means the stream is deleted, finalized or expired.

    Notes:
        bqemulator answers NOT_FOUND / FAILED_PRECONDITION; BigQuery answers
        INVALID_ARGUMENT with a StorageError (STREAM_NOT_FOUND, STREAM_FINALIZED), so its
        words are read too. A schema refusal is never a lost stream.
    """
    if error is None:
        return False
    text = str(error).lower()
    if "schema" in text or "field" in text:
        return False
    if isinstance(error, gexc.NotFound | gexc.FailedPrecondition):
        return True
    return isinstance(error, gexc.InvalidArgument) and any(w in text for w in _GONE_WORDS)
