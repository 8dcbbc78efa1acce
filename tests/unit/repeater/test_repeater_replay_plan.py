"""Replay planning: which objects, which lines, and the names of what replay leaves behind."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import orjson
import pytest
from plowline_core.badrows import Processor, RecoveryErrorRow
from plowline_repeater.replay_plan import (
    DeadEndObject,
    Replayable,
    TimeWindow,
    Unrecoverable,
    alternative_names,
    classify_line,
    kept_name,
    object_time,
    parse_moment,
    plan_object,
    select_objects,
)

PROCESSOR = Processor("plowline-repeater", "0.1.0")
ROW = {"event_id": "e1", "etl_tstamp": "2026-11-22T05:00:00+00:00", "v_etl": "x"}
NAME_05 = "2026/11/22/05/20261122T051307.250Z-4f1c.ndjson"
NAME_06 = "2026/11/22/06/20261122T060000Z-8be0.ndjson"


def _line(payload: str, message: str = "no such field: x.") -> bytes:
    return RecoveryErrorRow(
        {"message": message, "location": None, "reason": "unknown_field"}, payload
    ).to_json(PROCESSOR)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("2026-11-22", datetime(2026, 11, 22, tzinfo=UTC), id="date"),
        pytest.param("2026-11-22T05:13Z", datetime(2026, 11, 22, 5, 13, tzinfo=UTC), id="zulu"),
        pytest.param("2026-11-22T05:13", datetime(2026, 11, 22, 5, 13, tzinfo=UTC), id="naive"),
        pytest.param(
            "2026-11-22T07:13+02:00", datetime(2026, 11, 22, 5, 13, tzinfo=UTC), id="offset"
        ),
        pytest.param("yesterday", None, id="not-iso"),
    ],
)
def test_parse_moment(text: str, expected: datetime | None) -> None:
    """Dates and date-times are read as UTC; anything else is None."""
    assert expected == parse_moment(text)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param(NAME_05, datetime(2026, 11, 22, 5, 13, 7, 250000, tzinfo=UTC), id="millis"),
        pytest.param(NAME_06, datetime(2026, 11, 22, 6, tzinfo=UTC), id="seconds"),
        pytest.param(
            "2026/11/22/05/20261122T051307.250Z-4f1c.rest.ndjson",
            datetime(2026, 11, 22, 5, 13, 7, 250000, tzinfo=UTC),
            id="rest",
        ),
        pytest.param("2026/11/22/05/notes.txt", None, id="other-file"),
        pytest.param("20261122T051307Z-a.ndjson", None, id="no-hour-path"),
    ],
)
def test_object_time_comes_from_the_name(name: str, expected: datetime | None) -> None:
    """An object's time is the UTC timestamp of its name; other names have none."""
    assert expected == object_time(name)


def test_select_objects_filters_by_time_and_skips_results() -> None:
    """Objects are taken in the window, reported outside it, and results are never inputs."""
    names = [
        NAME_06,
        NAME_05,
        "replayed/" + NAME_05,
        "failed/" + NAME_05,
        "unrecoverable/" + NAME_05,
        "README.txt",
    ]
    window = TimeWindow(since=datetime(2026, 11, 22, 5, 30, tzinfo=UTC))
    selection = select_objects(names, window)
    expected = (
        (DeadEndObject(NAME_06, datetime(2026, 11, 22, 6, tzinfo=UTC)),),
        (NAME_05,),
        ("README.txt",),
    )
    assert expected == (selection.chosen, selection.outside, selection.ignored)


@pytest.mark.parametrize(
    ("moment", "expected"),
    [
        pytest.param(datetime(2026, 11, 22, 5, tzinfo=UTC), True, id="since-included"),
        pytest.param(datetime(2026, 11, 22, 6, tzinfo=UTC), False, id="until-excluded"),
        pytest.param(datetime(2026, 11, 22, 4, 59, tzinfo=UTC), False, id="before"),
    ],
)
def test_time_window_bounds(moment: datetime, expected: bool) -> None:
    """--since is included and --until excluded."""
    window = TimeWindow(
        datetime(2026, 11, 22, 5, tzinfo=UTC), datetime(2026, 11, 22, 6, tzinfo=UTC)
    )
    assert expected == window.contains(moment)


def test_a_recovery_bad_row_yields_its_row() -> None:
    """The payload of a loader_recovery_error is the failed-insert row to replay."""
    outcome = classify_line(_line(orjson.dumps(ROW).decode()), None)
    expected = (ROW, "e1", "no such field: x.")
    actual = (
        (outcome.failed.row, outcome.failed.event_id, outcome.error)
        if isinstance(outcome, Replayable)
        else outcome
    )
    assert expected == actual


@pytest.mark.parametrize(
    ("line", "why"),
    [
        pytest.param(b"garbage", "not a self-describing bad row", id="not-json"),
        pytest.param(
            b'{"schema":"iglu:com.snowplowanalytics.snowplow.badrows/loader_runtime_error/jsonschema/1-0-1","data":{}}',
            "a loader_runtime_error bad row, not loader_recovery_error",
            id="other-bad-row",
        ),
        pytest.param(
            b'{"schema":"iglu:com.snowplowanalytics.snowplow.badrows/loader_recovery_error/jsonschema/1-0-0","data":{"payload":1}}',
            "its payload is not a string",
            id="payload-not-string",
        ),
        pytest.param(
            _line('{"etl_tstamp":"2026-11-22T05:00:00Z"}'),
            "failed insert: event_id must be a non-empty string, got None",
            id="no-event-id",
        ),
    ],
)
def test_lines_without_a_row_are_unrecoverable(line: bytes, why: str) -> None:
    """A line that holds no failed-insert row is unrecoverable, with the reason."""
    assert Unrecoverable(line, why) == classify_line(line, None)


def test_error_matches_leaves_other_rows_out() -> None:
    """A row whose failure message does not match --error-matches is kept, not replayed."""
    line = _line(orjson.dumps(ROW).decode(), "Cannot convert value to integer")
    assert None is classify_line(line, re.compile("no such field"))


def test_plan_object_sorts_every_line() -> None:
    """Rows, unrecoverable lines and left-out rows are told apart; blank lines are skipped."""
    wanted = _line(orjson.dumps(ROW).decode())
    other = _line(orjson.dumps({**ROW, "event_id": "e2"}).decode(), "invalid")
    body = wanted + b"\n\n" + b"junk\r\n" + other + b"\n"
    source = DeadEndObject(NAME_05, datetime(2026, 11, 22, tzinfo=UTC))
    plan = plan_object(source, body, re.compile("no such"))
    expected = (["e1"], [b"junk"], [other], True)
    actual = (
        [row.failed.event_id for row in plan.rows],
        [item.line for item in plan.unrecoverable],
        list(plan.kept),
        plan.has_work,
    )
    assert expected == actual


def test_kept_rows_get_a_name_in_the_input_layout() -> None:
    """Left-out rows stay an input, at the same time as their source."""
    expected = "2026/11/22/05/20261122T051307.250Z-4f1c.rest.ndjson"
    assert expected == kept_name(NAME_05)


def test_alternative_names_number_the_stem() -> None:
    """When a result name is taken by other content, .2, .3… are tried."""
    names = alternative_names("failed/a.ndjson")
    expected = ["failed/a.ndjson", "failed/a.2.ndjson", "failed/a.3.ndjson"]
    assert expected == [next(names) for _ in range(3)]
