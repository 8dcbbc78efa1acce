"""decide() re-inserts a failed insert as soon as it fits, or once its backoff passed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from plowline_core.messages import FailedInsert
from plowline_core.ports import InsertFailure, InsertReason, Row
from plowline_core.schema.field import Field, FieldType
from plowline_repeater.decision import Attempt, DeadEnd, Decision, Insert, Wait, deadline, decide

ETL = datetime(2026, 11, 22, 5, 0, tzinfo=UTC)
BACKOFF = 900.0
DEADLINE = ETL + timedelta(seconds=BACKOFF)
NARROW = (Field("event_id", FieldType.STRING), Field("etl_tstamp", FieldType.TIMESTAMP))
WIDE = (*NARROW, Field("contexts_x_1", FieldType.STRING))
ROW = {"event_id": "e1", "etl_tstamp": ETL.isoformat(), "contexts_x_1": "v"}
FAILED = FailedInsert("e1", ETL, ROW)


def _refusal(reason: InsertReason, at: datetime) -> Attempt:
    return Attempt(at, InsertFailure(Row("e1", ROW), reason, "refused", "contexts_x_1"))


EARLY = ETL + timedelta(seconds=10)
LATE = DEADLINE + timedelta(seconds=1)


@pytest.mark.parametrize(
    ("fields", "now", "last", "expected"),
    [
        pytest.param(WIDE, EARLY, None, Insert(), id="fits-first-time"),
        pytest.param(NARROW, EARLY, None, Wait(DEADLINE), id="missing-column-waits"),
        pytest.param(NARROW, DEADLINE, None, Insert(), id="backoff-passed-tries-anyway"),
        pytest.param(
            WIDE, EARLY, _refusal(InsertReason.UNKNOWN_FIELD, EARLY), Insert(), id="column-came"
        ),
        pytest.param(
            WIDE, EARLY, _refusal(InsertReason.INVALID, EARLY), Wait(DEADLINE), id="invalid-waits"
        ),
        pytest.param(
            WIDE,
            LATE,
            _refusal(InsertReason.INVALID, EARLY),
            Insert(),
            id="last-chance-after-backoff",
        ),
        pytest.param(
            WIDE,
            LATE,
            _refusal(InsertReason.INVALID, LATE),
            DeadEnd(_refusal(InsertReason.INVALID, LATE).failure),
            id="refused-after-backoff-dead-ends",
        ),
        pytest.param(
            WIDE,
            LATE,
            _refusal(InsertReason.STOPPED, LATE),
            Insert(),
            id="stopped-is-not-a-refusal",
        ),
    ],
)
def test_decide(
    fields: tuple[Field, ...], now: datetime, last: Attempt | None, expected: Decision
) -> None:
    """Each situation gets the documented decision."""
    assert expected == decide(FAILED, fields, now, DEADLINE, last)


def test_the_backoff_counts_from_when_the_failure_was_first_seen() -> None:
    """deadline() adds the backoff to the first-seen time, whatever the event's etl_tstamp."""
    seen = datetime(2026, 11, 24, 6, 0, tzinfo=UTC)
    expected = seen + timedelta(seconds=BACKOFF)
    assert expected == deadline(seen, BACKOFF)
