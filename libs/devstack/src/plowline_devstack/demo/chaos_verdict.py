"""The verdict of a chaos run: exact per event id, duplicates judged by what the write mode promises.

Every mode must place each published event once and rightly: each good event a table
row, each malformed line a bad row, nothing missing, nothing unexpected, nothing
dead-ended (no chaos event is meant never to fit). The pipeline must settle within the
settle timeout, and every service must still run at the end (a crash of its own is a
failure; only the kills are allowed).

Duplicates are always counted and printed: table rows, bad rows and dead-end rows that
share an event id. What fails the run depends on the mode:

- ``exactly-once`` promises no duplicate row at all (a ledger of committed event ids):
  any duplicate row fails the run.
- ``insert-all`` promises what BigQuery's insertId does: a copy re-sent within about a
  minute of the first is dropped (best effort; the local stack drops it always). A
  redelivery that comes later (a message the killed loader held, redelivered while a
  backlog of tens of thousands waits before it) is stored again, as on Google. So a
  duplicate fails the run when its copies were built less than the window apart
  (their ``load_tstamp``, stamped by the loader: the insertId did not work); copies
  further apart are reported as outside the window.
- ``write-api-default`` and ``file-loads`` have no de-duplication across deliveries in
  BigQuery (the COMMITTED stream's offsets only settle a re-sent append; there is no
  insertId, and none for load jobs): a batch written but not acked before a
  SIGKILL, or redelivered by Pub/Sub, is written again, all of it. That is the documented
  at-least-once contract of those modes (``plowline_cloud.sinks``), and no bound follows
  from it that is tighter than "every row of every batch in flight at each kill, plus
  every redelivery": the duplicate rows are reported (and are figures of the run), never
  a failure. Loss is a failure there as everywhere.
- Bad rows, in every mode, must be one per malformed line: a duplicate bad row fails the
  run. The dead-letter writer knows a bad row by its bytes less the moments its failure
  records (``plowline_deadletter.identity``), remembers the ones it wrote and, after a
  restart, reads back the objects of its lookback (``deliveries``, ``lookback``):
  a copy republished by a loader killed before its ack, or redelivered to a writer killed
  before its, is acked, not written. Like insertId it is best effort within a window
  (the lookback, 10 minutes by default), far longer than a chaos run's redeliveries.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from plowline_devstack.demo.chaos import ChaosReport
from plowline_devstack.demo.write_modes import INSERT_ID_WINDOW_S

SETTLE_GOAL_S = 60.0
"""The settle time the chaos run aims for; a figure of the run, not part of its verdict (the
settle timeout is): on a loaded machine a restart alone can take longer."""


@dataclass(frozen=True, slots=True)
class ChaosVerdict:
    """PASS or FAIL of one chaos run, with every reason for a FAIL."""

    report: ChaosReport
    failures: tuple[str, ...]

    @property
    def passed(self) -> bool:
        """True when nothing failed."""
        return not self.failures


def verdict(report: ChaosReport) -> ChaosVerdict:
    """Judge ``report`` by the rules of this module."""
    failures: list[str] = []
    if report.error:
        failures.append(f"the run stopped: {report.error}")
    plan = report.plan
    if report.accounting is None:
        return ChaosVerdict(report, (*failures, "no accounting was read"))
    acc = report.accounting
    done = {kill.kill for kill in report.kills}
    if len(done) < len(report.schedule):
        failures.append(f"only {len(done)} of {len(report.schedule)} planned kills happened")
    if report.settle_s is None:
        failures.append(f"not settled within {plan.settle_timeout:g} s")
    if report.not_running:
        failures.append(f"not running at the end: {', '.join(report.not_running)}")
    wrong = {
        "missing": len(acc.missing),
        "unexpected": len(acc.unexpected),
        "misplaced": len(acc.misplaced),
        "dead-ended": len(acc.dead_ended),
        "good events not a row": len(acc.good - acc.in_table),
        "malformed lines not a bad row": len(acc.bad - acc.in_bad_rows),
    }
    failures += [f"{what}: {count}" for what, count in wrong.items() if count]
    if acc.duplicate_bad_rows:
        failures.append(
            f"{acc.duplicate_bad_rows} duplicate bad rows: the dead-letter writer files each "
            "bad row once within its lookback"
        )
    window = plan.mode.dedup_window_s
    if window is not None and acc.duplicates:
        inside = _inside(report, window)
        if inside:
            within = "at any distance" if math.isinf(window) else f"within {window:g} s"
            failures.append(
                f"{inside} duplicate rows in {plan.mode.name}, which de-duplicates {within}"
            )
    return ChaosVerdict(report, tuple(failures))


def _inside(report: ChaosReport, window: float) -> int:
    """Return the duplicate rows whose copies were built less than ``window`` apart."""
    acc = report.accounting
    if acc is None:
        return 0
    if math.isinf(window) or not report.copies:  # no spreads read: every one counts
        return acc.duplicates
    return sum(copies - 1 for copies, spread in report.copies.values() if spread < window)


def report_lines(judged: ChaosVerdict) -> list[str]:
    """Return the run's figures and verdict as printed lines, PASS/FAIL last."""
    report = judged.report
    plan = report.plan
    out = [
        f"write mode                       {plan.mode.name}",
        f"faults on                        {', '.join(plan.faults.names()) or 'none'}",
        *(
            f"    struck {count:>6}x  {name}"
            for name, count in sorted(report.faults_struck.items())
        ),
        f"events published                 {report.published:>8}",
        f"kills (SIGKILL, then restart)    {len(report.kills):>8}",
    ]
    for done in report.kills:
        restart = "-" if done.restart_s is None else f"{done.restart_s:.1f} s"
        out.append(
            f"    {done.killed_at:7.1f} s  {done.kill.service:<10} (planned {done.kill.at:.1f} s)"
            f"  restart {restart}"
        )
    out.append(f"exited by themselves, restarted {len(report.exits):>8}")
    for seen in report.exits:
        restart = "-" if seen.restart_s is None else f"{seen.restart_s:.1f} s"
        out.append(
            f"    {seen.seen_at:7.1f} s  {seen.service:<10} (exit code {seen.code})  restart {restart}"
        )
    settle = "-" if report.settle_s is None else f"{report.settle_s:.1f} s"
    if report.settle_s is not None:
        met = "met" if report.settle_s <= SETTLE_GOAL_S else "MISSED"
        settle += f"   (goal <= {SETTLE_GOAL_S:g} s: {met})"
    out += [
        f"publishing took                  {report.publish_s:>8.1f} s",
        f"settle time after the last kill  {settle}",
        f"wall time of the run             {report.wall_s:>8.1f} s",
    ]
    acc = report.accounting
    if acc is not None:
        out += [
            f"rows (distinct event ids)        {len(acc.in_table):>8}",
            f"bad rows (distinct event ids)    {len(acc.in_bad_rows):>8}",
            f"dead-ended                       {len(acc.dead_ended):>8}",
            f"duplicate rows                   {acc.duplicates:>8}",
            f"duplicate bad rows               {acc.duplicate_bad_rows:>8}",
            f"duplicate dead-end rows          {acc.duplicate_dead_ends:>8}",
        ]
    out.append(f"duplicate rows rule              {_rule(plan.mode.dedup_window_s)}")
    out.append("duplicate bad rows rule          must be 0 (the dead-letter writer's lookback)")
    if acc is not None and acc.duplicates and report.copies:
        window = plan.mode.dedup_window_s or INSERT_ID_WINDOW_S
        spreads = sorted(spread for _, spread in report.copies.values())
        outside = acc.duplicates - _inside(report, window)
        out.append(
            f"    copies' load_tstamps apart: {spreads[0]:.1f} s to {spreads[-1]:.1f} s;"
            f" {outside} duplicate rows more than {window:g} s apart"
        )
    if acc is not None:
        through = sum(c - 1 for i, (c, _) in report.copies.items() if i in report.refused)
        out.append(
            f"refused by the loader at least once {len(report.refused):>8}"
            f"   (events sent to the repeater; {through} of the duplicate rows are theirs)"
        )
    out += [f"    FAIL because {reason}" for reason in judged.failures]
    out.append(f"{'PASS' if judged.passed else 'FAIL'}: chaos in {plan.mode.name}")
    return out


def _rule(window: float | None) -> str:
    if window is None:
        return "at least once: reported"
    if math.isinf(window):
        return "must be 0"
    return f"must be 0 for copies less than {window:g} s apart (insertId window)"
