"""The chaos verdict: exact placement in every mode, duplicate rows judged by the write mode."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from plowline_devstack.demo.chaos import ChaosPlan, ChaosReport, Kill, KillDone
from plowline_devstack.demo.chaos_verdict import report_lines, verdict
from plowline_devstack.demo.report import Accounting
from plowline_devstack.demo.write_modes import WRITE_MODES

GOOD = tuple(f"g{i}" for i in range(100))
BAD = ("b1", "b2")
KILL = Kill(1.0, "loader")


def _report(
    mode: str,
    table: Sequence[str],
    bad_rows: Sequence[str] = BAD,
    dead: Sequence[str] = (),
    settle: float | None = 12.0,
    not_running: Sequence[str] = (),
) -> ChaosReport:
    report = ChaosReport(ChaosPlan(WRITE_MODES[mode]), (KILL,))
    report.kills = [KillDone(KILL, 1.0, 5.0)]
    report.accounting = Accounting.of(GOOD, BAD, list(table), bad_rows, dead)
    report.settle_s = settle
    report.not_running = list(not_running)
    return report


@pytest.mark.parametrize("mode", list(WRITE_MODES))
def test_chaos_verdict_passes_every_event_placed_once(mode: str) -> None:
    """One row per good event and one bad row per malformed line pass in every mode."""
    expected: tuple[str, ...] = ()
    assert expected == verdict(_report(mode, GOOD)).failures


@pytest.mark.parametrize(
    ("mode", "spread", "failures"),
    [
        pytest.param("exactly-once", 5.0, ("1 duplicate rows in exactly-once, which de-duplicates at any distance",), id="exactly-once-near"),
        pytest.param("exactly-once", 900.0, ("1 duplicate rows in exactly-once, which de-duplicates at any distance",), id="exactly-once-far"),
        pytest.param("insert-all", 5.0, ("1 duplicate rows in insert-all, which de-duplicates within 60 s",), id="insert-all-inside-window"),
        pytest.param("insert-all", 90.0, (), id="insert-all-outside-window"),
        pytest.param("write-api-default", 5.0, (), id="write-api-default"),
        pytest.param("file-loads", 5.0, (), id="file-loads"),
    ],
)  # fmt: skip
def test_chaos_verdict_fails_a_duplicate_row_only_where_the_mode_deduplicates_it(
    mode: str, spread: float, failures: tuple[str, ...]
) -> None:
    """A duplicate fails exactly-once always, insert-all inside its insertId window, no other mode."""
    report = _report(mode, [*GOOD, "g7"])
    report.copies = {"g7": (2, spread)}
    assert failures == verdict(report).failures


@pytest.mark.parametrize("mode", list(WRITE_MODES))
def test_chaos_verdict_fails_a_duplicate_bad_row_in_every_mode(mode: str) -> None:
    """A malformed line filed twice is counted, shown and fails the run, whatever the write mode."""
    judged = verdict(_report(mode, list(GOOD), [*BAD, "b1"]))
    expected = (
        (
            "1 duplicate bad rows: the dead-letter writer files each bad row once within its lookback",
        ),
        True,
    )
    actual = (judged.failures, "duplicate bad rows                      1" in report_lines(judged))
    assert expected == actual


@pytest.mark.parametrize(
    ("kwargs", "failure"),
    [
        pytest.param({"table": list(GOOD[1:])}, "missing: 1", id="missing"),
        pytest.param({"table": list(GOOD[1:]), "dead": ["g0"]}, "dead-ended: 1", id="dead-ended"),
        pytest.param({"table": list(GOOD), "settle": None}, "not settled within 300 s", id="unsettled"),
        pytest.param(
            {"table": list(GOOD), "not_running": ["mutator"]}, "not running at the end: mutator",
            id="crashed",
        ),
    ],
)  # fmt: skip
def test_chaos_verdict_names_each_failure(kwargs: dict[str, object], failure: str) -> None:
    """A lost, dead-ended or unsettled event or a crashed service fails with its reason."""
    judged = verdict(_report("exactly-once", **kwargs))  # type: ignore[arg-type]
    assert failure in judged.failures


def test_chaos_report_prints_how_often_each_fault_struck() -> None:
    """The report names each fault that struck with its count, under the faults on."""
    report = _report("insert-all", GOOD)
    report.faults_struck = {"pubsub.pull-unavailable": 7, "bigquery.backend-error": 3}

    lines = report_lines(verdict(report))

    expected = [
        "    struck      3x  bigquery.backend-error",
        "    struck      7x  pubsub.pull-unavailable",
    ]
    assert expected == [line for line in lines if line.startswith("    struck")]
