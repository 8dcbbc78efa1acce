"""The demo scenario end to end: every published event is a row, a bad row or a dead-end row.

The tests share one pipeline and run in file order: the never-fitting tests come last,
because they restart the repeater with a 5 s backoff (short enough to wait for, too short
for the mutation lag of the first events, whose columns exist by then).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft4Validator
from plowline_devstack.demo.conflict import CONFLICT_COLUMN, CONFLICT_FIELD
from plowline_devstack.demo.generate import DEAD_END, GeneratedLine
from plowline_devstack.demo.run import DemoRun
from plowline_devstack.demo.services import DEAD_END_PREFIX, LOADER

_RECOVERY_ERROR = "com.snowplowanalytics.snowplow.badrows/loader_recovery_error/jsonschema/1-0-0"
_NEVER_FITTING = 12


def _placement(pipeline: DemoRun, sent: list[GeneratedLine]) -> dict[str, Any]:
    accounting = pipeline.account(sent)
    return {
        "rows": accounting.in_table == accounting.good,
        "bad rows": accounting.in_bad_rows == accounting.bad,
        "dead-ended": len(accounting.dead_ended),
        "missing": len(accounting.missing),
        "misplaced": len(accounting.misplaced),
        "unexpected": len(accounting.unexpected),
        "duplicates": accounting.all_duplicates,
    }


_ALL_PLACED = {
    "rows": True,
    "bad rows": True,
    "dead-ended": 0,
    "missing": 0,
    "misplaced": 0,
    "unexpected": 0,
    "duplicates": 0,
}


def test_e2e_every_event_is_a_row_or_a_bad_row(
    pipeline: DemoRun,
    published: list[GeneratedLine],
    make_lines: Callable[..., list[GeneratedLine]],
    wait_accounted: Callable[..., int],
) -> None:
    """600 events (5% malformed, new columns included) end as exactly one row or bad row each."""
    batch = make_lines(600, 11)
    published.extend(batch)
    pipeline.publish(batch, rate=500.0)
    wait_accounted(pipeline, len(published))
    expected = dict(_ALL_PLACED)
    assert expected == _placement(pipeline, published)


def test_e2e_mutator_adds_every_entity_column(pipeline: DemoRun) -> None:
    """The table gained the five entity columns the events need, and only those."""
    added = set(pipeline.reader.columns()) - set(pipeline.initial_columns)
    expected = {
        "contexts_com_snowplowanalytics_snowplow_web_page_1_0_0",
        "contexts_com_snowplowanalytics_snowplow_ua_parser_context_1_0_0",
        "unstruct_event_com_snowplowanalytics_snowplow_link_click_1_0_0",
        "unstruct_event_com_snowplowanalytics_snowplow_link_click_1_0_1",
        "unstruct_event_com_acme_checkout_started_1_0_0",
    }
    assert expected == added


@pytest.mark.timeout(600)
def test_e2e_loader_killed_mid_stream_loses_nothing(
    pipeline: DemoRun,
    published: list[GeneratedLine],
    make_lines: Callable[..., list[GeneratedLine]],
    wait_accounted: Callable[..., int],
) -> None:
    """SIGKILL the loader half-way through 400 events, restart it: every event still lands."""
    batch = make_lines(400, 12)
    published.extend(batch)
    pipeline.publish(batch[:200], rate=100.0)
    pipeline.restart(LOADER, kill=True, timeout=240.0)
    pipeline.publish(batch[200:], rate=400.0)
    wait_accounted(pipeline, len(published))
    expected = dict(_ALL_PLACED)
    assert expected == _placement(pipeline, published)


def test_e2e_spark_scratch_stays_in_the_run_directory(pipeline: DemoRun) -> None:
    """The loader's block manager directory is under the run's directory, not /tmp.

    A SIGKILLed loader cannot remove it: there it goes with the run instead of piling up.
    """
    scratch = sorted((pipeline.work_dir / "spark-local").glob("blockmgr-*"))
    assert scratch, f"no blockmgr-* under {pipeline.work_dir / 'spark-local'}"


@pytest.fixture(scope="module")
def never_fitting_batch(
    pipeline: DemoRun,
    published: list[GeneratedLine],
    make_lines: Callable[..., list[GeneratedLine]],
    wait_accounted: Callable[..., int],
) -> list[GeneratedLine]:
    """200 events, 12 of them legacy orders, published with the repeater's backoff at 5 s."""
    pipeline.use_backoff(5.0)
    batch = make_lines(200, 13, _NEVER_FITTING)
    published.extend(batch)
    pipeline.publish(batch, rate=500.0)
    wait_accounted(pipeline, len(published))
    return batch


@pytest.mark.timeout(600)
def test_e2e_never_fitting_events_end_in_the_dead_end_bucket(
    pipeline: DemoRun, published: list[GeneratedLine], never_fitting_batch: list[GeneratedLine]
) -> None:
    """Each id is exactly one of: a row, a bad row, or (legacy orders only) a dead-end row."""
    accounting = pipeline.account(published)
    legacy = {g.event_id for g in never_fitting_batch if g.fate == DEAD_END}
    expected = {
        "legacy orders": _NEVER_FITTING,
        "rows": len({g.event_id for g in published if g.good} - legacy),
        "bad rows": len({g.event_id for g in published if not g.good}),
        "dead-ended": legacy,
        "exact": True,
        "missing": 0,
    }
    actual = {
        "legacy orders": len(legacy),
        "rows": len(accounting.in_table),
        "bad rows": len(accounting.in_bad_rows),
        "dead-ended": set(accounting.dead_ended),
        "exact": accounting.exact,
        "missing": len(accounting.missing),
    }
    assert expected == actual


def test_e2e_dead_end_rows_are_loader_recovery_errors(
    pipeline: DemoRun, never_fitting_batch: list[GeneratedLine], conformance_dir: Path
) -> None:
    """Every dead-end line is a valid loader_recovery_error naming the refused order_id."""
    schema = json.loads((conformance_dir / "vectors" / "badrows" / _RECOVERY_ERROR).read_text())
    validator = Draft4Validator(schema)
    rows = pipeline.reader.dead_end_rows(pipeline.paths.dead_end_bucket, DEAD_END_PREFIX)
    expected: list[tuple[str, list[str], bool]]
    expected = [(f"iglu:{_RECOVERY_ERROR}", [], True)] * _NEVER_FITTING
    actual = [
        (
            row.bad_row["schema"],
            [e.message for e in validator.iter_errors(row.bad_row["data"])],
            "convert" in row.message.lower()
            and f"{CONFLICT_COLUMN}.{CONFLICT_FIELD}"
            in str(row.bad_row["data"]["failure"]["error"]["location"]),
        )
        for row in rows
    ]
    assert expected == actual


def test_e2e_hand_made_column_is_never_retyped(
    pipeline: DemoRun, never_fitting_batch: list[GeneratedLine]
) -> None:
    """After the legacy orders, the operator's order_id is still INTEGER: nothing retypes."""
    column = next(f for f in pipeline.reader.fields() if f.name == CONFLICT_COLUMN)
    expected = "INTEGER"
    assert expected == {f.name: f.type.value for f in column.fields}[CONFLICT_FIELD]
