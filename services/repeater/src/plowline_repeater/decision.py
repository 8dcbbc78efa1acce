"""When to re-insert a failed insert: as soon as it fits, or once its backoff has passed.

Notes:
    Pure: the table's fields and ``now`` are passed in. The backoff is counted from when the
    failure was first seen (the failed-insert message's Pub/Sub publish time), not from the
    event's ``etl_tstamp`` as Snowplow does: an event enriched long ago (a backfill, a replay,
    a pipeline catching up) still gets the whole backoff for the mutator to add its columns.
    The rule (docs/decisions.md, 8), with ``until = first seen + backoff``:

    1. The last attempt was made at or after ``until`` and failed → dead end.
    2. The backoff has passed → insert (one last attempt, whatever the schema says).
    3. The table lacks a field the row names → wait (for the mutator) until the backoff.
    4. The row fits and was never refused for its values → insert now.
    5. The row fits but the table refused its values → wait until the backoff, then try once
       more (no tight retry loop on a row BigQuery keeps rejecting).

    A ``stopped`` refusal (another row of the request failed) does not count against a row.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from plowline_core.messages import FailedInsert
from plowline_core.ports import InsertFailure, InsertReason
from plowline_core.schema.field import Field
from plowline_core.schema.widening import missing_fields

_RETRY_NOW = frozenset({InsertReason.UNKNOWN_FIELD, InsertReason.STOPPED})


@dataclass(frozen=True, slots=True)
class Attempt:
    """An insert that was refused, and when."""

    at: datetime
    failure: InsertFailure


@dataclass(frozen=True, slots=True)
class Insert:
    """Insert the row now."""


@dataclass(frozen=True, slots=True)
class Wait:
    """Keep the message leased; decide again when the schema changes or at ``until``."""

    until: datetime


@dataclass(frozen=True, slots=True)
class DeadEnd:
    """Give up: write the row to the dead-end bucket with BigQuery's last refusal."""

    failure: InsertFailure


Decision = Insert | Wait | DeadEnd


def deadline(first_seen: datetime, backoff: float) -> datetime:
    """Return when the backoff of a failure first seen at ``first_seen`` has passed."""
    return first_seen + timedelta(seconds=backoff)


def decide(
    failed: FailedInsert,
    table_fields: tuple[Field, ...],
    now: datetime,
    until: datetime,
    last: Attempt | None = None,
) -> Decision:
    """Return what to do with a failed insert now, its backoff ending at ``until`` (see above)."""
    if last is not None and last.at >= until and last.failure.reason is not InsertReason.STOPPED:
        return DeadEnd(last.failure)
    if now >= until:
        return Insert()
    if missing_fields(table_fields, failed.row):
        return Wait(until)
    if last is None or last.failure.reason in _RETRY_NOW:
        return Insert()
    return Wait(until)
