"""The demo's accounting: every generated event id placed as a row, a bad row or a dead-end row."""

from __future__ import annotations

import pytest
from plowline_devstack.demo.report import Accounting, sample_queries

GOOD = ("g1", "g2", "g3")
BAD = ("b1",)


@pytest.mark.parametrize(
    ("table", "bad_rows", "dead", "balanced"),
    [
        pytest.param(["g1", "g2", "g3"], ["b1"], [], True, id="all-placed"),
        pytest.param(["g1", "g2", "g3", "g3"], ["b1"], [], True, id="duplicate-row-still-placed"),
        pytest.param(["g1", "g2"], ["b1"], ["g3"], True, id="dead-ended-counts"),
        pytest.param(["g1", "g2"], ["b1"], [], False, id="missing-row"),
        pytest.param(["g1", "g2", "g3", "b1"], ["b1"], [], False, id="bad-event-as-row"),
        pytest.param(["g1", "g2", "g3", "zz"], ["b1"], [], False, id="unexpected-row"),
        pytest.param(["g1", "g2"], ["b1", "g3"], [], False, id="good-event-as-bad-row"),
    ],
)
def test_generate_accounting_balances(
    table: list[str], bad_rows: list[str], dead: list[str], balanced: bool
) -> None:
    """Published = rows + bad rows + dead-ended only when every id is in its one right place."""
    accounting = Accounting.of(GOOD, BAD, table, bad_rows, dead)
    assert balanced == accounting.balanced


def test_generate_accounting_counts_duplicate_rows() -> None:
    """Rows sharing an event id are counted as duplicates, not as extra events."""
    accounting = Accounting.of(GOOD, BAD, ["g1", "g1", "g2", "g3"], ["b1"], [])
    expected = (1, 3)
    assert expected == (accounting.duplicates, len(accounting.in_table))


@pytest.mark.parametrize(
    ("table", "bad_rows", "dead", "duplicates"),
    [
        pytest.param(["g1", "g1", "g2", "g3"], ["b1"], [], (1, 0, 0), id="row-twice"),
        pytest.param(["g1", "g2", "g3"], ["b1", "b1"], [], (0, 1, 0), id="bad-row-twice"),
        pytest.param(["g1", "g2"], ["b1"], ["g3", "g3"], (0, 0, 1), id="dead-end-twice"),
    ],
)
def test_generate_accounting_is_not_exact_with_a_duplicate(
    table: list[str], bad_rows: list[str], dead: list[str], duplicates: tuple[int, int, int]
) -> None:
    """A second copy of any event, as a row, a bad row or a dead-end row, fails the verdict."""
    accounting = Accounting.of(GOOD, BAD, table, bad_rows, dead, never_fit=dead)
    expected = (duplicates, False)
    actual = (
        (accounting.duplicates, accounting.duplicate_bad_rows, accounting.duplicate_dead_ends),
        accounting.exact,
    )
    assert expected == actual


def test_generate_accounting_is_exact_when_each_event_is_placed_once() -> None:
    """Every good event one row, every malformed line one bad row, nothing twice: exact."""
    accounting = Accounting.of(GOOD, BAD, list(GOOD), ["b1", "some-context-id"], [])
    assert accounting.exact


def test_generate_accounting_ignores_ids_of_other_events_in_bad_rows() -> None:
    """Ids a bad row mentions that were never published (page view ids…) are not counted."""
    accounting = Accounting.of(GOOD, BAD, list(GOOD), ["b1", "some-context-id"], [])
    expected = frozenset({"b1"})
    assert expected == accounting.in_bad_rows


def test_generate_sample_queries_follow_the_added_columns() -> None:
    """Link-click and checkout queries appear only once their columns exist."""
    columns = [
        "unstruct_event_com_snowplowanalytics_snowplow_link_click_1_0_0",
        "unstruct_event_com_acme_checkout_started_1_0_0",
    ]
    expected = (
        ["page views per browser"],
        [
            "page views per browser",
            "link clicks by target",
            "checkouts started by currency (count, revenue)",
        ],
    )
    actual = (
        [title for title, _ in sample_queries("p.d.t", [])],
        [title for title, _ in sample_queries("p.d.t", columns)],
    )
    assert expected == actual
