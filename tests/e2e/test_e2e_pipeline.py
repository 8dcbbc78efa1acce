"""The demo scenario end to end: every published event is a row, a bad row or a dead-end row."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from plowline_devstack.demo import DemoRun
from plowline_devstack.demo_services import LOADER
from plowline_devstack.generate import GeneratedLine


def _placement(pipeline: DemoRun, sent: list[GeneratedLine]) -> dict[str, Any]:
    accounting = pipeline.account(sent)
    return {
        "rows": accounting.in_table == accounting.good,
        "bad rows": accounting.in_bad_rows == accounting.bad,
        "dead-ended": len(accounting.dead_ended),
        "missing": len(accounting.missing),
        "misplaced": len(accounting.misplaced),
        "unexpected": len(accounting.unexpected),
    }


_ALL_PLACED = {
    "rows": True,
    "bad rows": True,
    "dead-ended": 0,
    "missing": 0,
    "misplaced": 0,
    "unexpected": 0,
}


def test_e2e_every_event_is_a_row_or_a_bad_row(
    pipeline: DemoRun,
    published: list[GeneratedLine],
    make_lines: Callable[[int, int], list[GeneratedLine]],
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
    make_lines: Callable[[int, int], list[GeneratedLine]],
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
