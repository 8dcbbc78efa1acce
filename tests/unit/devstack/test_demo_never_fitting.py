"""The never-fitting case: legacy orders, the hand-made column they never fit, their accounting."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import plowline_devstack
import pytest
from plowline_cloud.iglu.resolver import load_resolver
from plowline_core.iglu.key import SchemaKey
from plowline_core.schema.columns import column_field
from plowline_core.schema.entity import ShredProperty
from plowline_core.schema.field import FieldType
from plowline_core.schema.widening import plan_widening
from plowline_core.testing.clock import FixedClock
from plowline_core.transform.row import RowBuilder, TransformedRow
from plowline_devstack.demo.conflict import CONFLICT_COLUMN, CONFLICT_FIELD, hand_made_column
from plowline_devstack.demo.generate import BAD_ROW, DEAD_END, ROW, GeneratedLine, generate
from plowline_devstack.demo.report import Accounting, Summary, dead_end_row
from plowline_devstack.demo.services import ServiceSpec, with_backoff

START = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)
EXAMPLES = Path(plowline_devstack.__file__).parent / "examples"


@pytest.fixture(scope="module")
def lines() -> list[GeneratedLine]:
    """Five hundred lines from one seed, 5% malformed, 10 legacy orders."""
    return list(generate(500, start=START, seed=5, never_fitting=10))


@pytest.fixture(scope="module")
def legacy_rows(lines: list[GeneratedLine]) -> list[object]:
    """The legacy orders transformed by the loader's RowBuilder against the example registry."""
    builder = RowBuilder(load_resolver(EXAMPLES / "resolver.json", FixedClock(START)))
    return [builder.transform_line(g.line) for g in lines if g.fate == DEAD_END]


def test_demo_never_fitting_count_is_exact(lines: list[GeneratedLine]) -> None:
    """Asking for 10 never-fitting lines gives 10 legacy orders beside 25 malformed lines."""
    fates = [g.fate for g in lines]
    expected = (465, 25, 10, {"legacy_order"})
    actual = (
        fates.count(ROW),
        fates.count(BAD_ROW),
        fates.count(DEAD_END),
        {g.kind for g in lines if g.fate == DEAD_END},
    )
    assert expected == actual


def test_demo_never_fitting_lines_are_valid_events(legacy_rows: list[object]) -> None:
    """Each legacy order is a valid event: the loader makes a row with a text order_id."""
    expected = [(True, str)] * 10
    actual = [
        (
            isinstance(row, TransformedRow),
            type(row.data[CONFLICT_COLUMN][CONFLICT_FIELD])
            if isinstance(row, TransformedRow)
            else None,
        )
        for row in legacy_rows
    ]
    assert expected == actual


def test_demo_never_fitting_rejected_at_once_beyond_the_good_lines() -> None:
    """More never-fitting lines than good ones is refused when generate is called."""
    with pytest.raises(ValueError, match="never_fitting"):
        generate(10, start=START, bad_fraction=0.5, never_fitting=6)


def test_demo_hand_made_column_conflicts_only_at_order_id() -> None:
    """The mutator's widening plan finds one conflict, at order_id, and nothing to add."""
    key = "com.acme/legacy_order/jsonschema/1-0-0"
    schema = json.loads((EXAMPLES / "iglu" / "schemas" / key).read_text())
    needed = column_field(SchemaKey.parse(f"iglu:{key}"), schema, ShredProperty.UNSTRUCT_EVENT)
    column = hand_made_column(EXAMPLES / "iglu")
    plan = plan_widening((column,), (needed,))
    order_id = {f.name: f.type for f in column.fields}[CONFLICT_FIELD]
    expected = ([f"{CONFLICT_COLUMN}.{CONFLICT_FIELD}"], (), FieldType.INTEGER)
    assert expected == ([c.path for c in plan.conflicts], plan.additions, order_id)


@pytest.mark.parametrize(
    ("table", "dead", "balanced", "exact"),
    [
        pytest.param(["g1", "g2"], ["n1"], True, True, id="never-fitting-dead-ended"),
        pytest.param(["g1", "g2", "n1"], [], False, False, id="never-fitting-as-row"),
        pytest.param(["g1"], ["n1", "g2"], True, False, id="regular-event-dead-ended"),
        pytest.param(["g1", "g2"], [], False, False, id="never-fitting-missing"),
    ],
)
def test_demo_never_fitting_accounting(
    table: list[str], dead: list[str], balanced: bool, exact: bool
) -> None:
    """Never-fitting ids must be dead-ended, never rows; a dead-ended regular event is not exact."""
    accounting = Accounting.of(["g1", "g2", "n1"], ["b1"], table, ["b1"], dead, never_fit=["n1"])
    assert (balanced, exact) == (accounting.balanced, accounting.exact)


def _dead_end_line(event_id: str) -> bytes:
    data = {
        "processor": {"artifact": "plowline-repeater", "version": "0.1.0"},
        "failure": {
            "error": {
                "message": "Cannot convert value to integer (bad value): LO-2024-000001",
                "location": f"{CONFLICT_COLUMN}.{CONFLICT_FIELD}",
                "reason": "invalid",
            }
        },
        "payload": json.dumps({"domain_sessionid": "0" * 8 + "-0000-4000-8000-" + "0" * 12,
                               "event_id": event_id}),
    }  # fmt: skip
    schema = "iglu:com.snowplowanalytics.snowplow.badrows/loader_recovery_error/jsonschema/1-0-0"
    return json.dumps({"schema": schema, "data": data}).encode()


def test_demo_verdict_fails_on_a_regular_event_dead_ended() -> None:
    """A regular event in the dead-end bucket is a FAIL, counted as dead-ended but fitting."""
    accounting = Accounting.of(["g1", "g2"], [], ["g1"], [], ["g2"])
    summary = Summary(
        published=2,
        rows=1,
        distinct_rows=1,
        bad_rows=0,
        bad_row_objects=0,
        dead_ended=1,
        columns_added=[],
        reinserted=None,
        mutator_columns=None,
        accounting=accounting,
    )
    verdict = summary.lines()[-1]
    expected = (True, "FAIL", "dead-ended but could fit 1")
    actual = (accounting.balanced, verdict.split(":")[0], verdict.split(", ")[3])
    assert expected == actual


def test_demo_dead_end_row_takes_the_payload_event_id() -> None:
    """The event id of a dead-end line is the payload row's event_id, not its first UUID."""
    event_id = "11111111-2222-4333-8444-555555555555"
    row = dead_end_row(_dead_end_line(event_id))
    expected = (event_id, "Cannot convert value to integer (bad value): LO-2024-000001")
    assert expected == (row.event_id, row.message)


def test_demo_summary_lists_dead_ended_rows_by_id() -> None:
    """The summary names each dead-ended id, tagged as never fitting or unexpected."""
    never, stray = "11111111-2222-4333-8444-555555555555", "aaaaaaaa-2222-4333-8444-555555555555"
    accounting = Accounting.of(["g1", never, stray], [], ["g1"], [], [never, stray], [never])
    summary = Summary(
        published=3,
        rows=1,
        distinct_rows=1,
        bad_rows=0,
        bad_row_objects=0,
        dead_ended=2,
        columns_added=[],
        reinserted=0.0,
        mutator_columns=0.0,
        accounting=accounting,
        dead_end_rows=[dead_end_row(_dead_end_line(never)), dead_end_row(_dead_end_line(stray))],
    )
    listed = [line.split()[1:3] for line in summary.lines() if line.startswith("    - ")]
    expected = [[never, "never"], [stray, "UNEXPECTED:"]]
    assert expected == listed


def test_demo_with_backoff_replaces_only_the_backoff() -> None:
    """The repeater's spec keeps every argument and its port; only --backoffPeriod changes."""
    spec = ServiceSpec("repeater", "plowline-repeater", ("run", "--backoffPeriod", "300"), 9)
    expected = ServiceSpec("repeater", "plowline-repeater", ("run", "--backoffPeriod", "5"), 9)
    assert expected == with_backoff(spec, 5.0)
