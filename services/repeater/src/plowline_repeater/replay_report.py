"""The text a person reads after ``plowline-repeater replay``, in Snowplow's recovery words.

Notes:
    Pure. recovered = rows now in the table (or on the failed-inserts topic), failed =
    rows the table refused again (filed under ``failed/``), unrecoverable = lines that hold
    no failed-insert row (filed under ``unrecoverable/``). Object names are relative to the
    replayed path, which is printed once.
"""

from __future__ import annotations

from plowline_repeater.replay import ObjectOutcome, ReplayReport
from plowline_repeater.replay_plan import FAILED, REPLAYED, UNRECOVERABLE, kept_name


def render(report: ReplayReport, where: str, destination: str) -> str:
    """Return the summary of a run (or, in a dry run, of what a run would do)."""
    lines = [_headline(report, where, destination), ""]
    if not report.selection.chosen and report.error is None:
        return "\n".join([*lines[:1], *_not_taken_line(report)]) + "\n"
    if report.outcomes:
        lines.extend(_object_line(outcome, report.dry_run) for outcome in report.outcomes)
        lines.append("")
    lines.extend(_totals(report))
    lines.extend(_not_taken_line(report))
    if report.error is not None:
        lines += ["", f"stopped at {report.stopped_at}: {report.error}"]
        lines.append("That object and the ones after it are untouched; run replay again.")
    elif report.failed and not report.dry_run:
        lines += ["", f"Rows that failed again can be replayed later: replay {where}{FAILED}"]
    return "\n".join(lines) + "\n"


def _headline(report: ReplayReport, where: str, destination: str) -> str:
    chosen = len(report.selection.chosen)
    if report.dry_run:
        return f"Dry run, nothing changed. Replaying {where} to {destination} would take {_n(chosen, 'object')}:"
    if not chosen:
        return f"Nothing to do: no dead-end objects to replay under {where}."
    return (
        f"Replayed {_n(len(report.outcomes), 'object')} of {chosen} from {where} to {destination}:"
    )


def _object_line(outcome: ObjectOutcome, dry_run: bool) -> str:
    plan = outcome.plan
    parts = []
    if dry_run:
        parts.append(f"{_n(len(plan.rows), 'row')} to replay")
    else:
        parts.append(f"{outcome.recovered} recovered")
        if outcome.failed:
            parts.append(f"{outcome.failed} failed")
    if plan.unrecoverable:
        parts.append(f"{len(plan.unrecoverable)} unrecoverable")
    if plan.kept:
        parts.append(f"{len(plan.kept)} left out")
    if not plan.has_work:
        parts.append("untouched")
    return f"  {plan.name}  {', '.join(parts)}"


def _totals(report: ReplayReport) -> list[str]:
    dry = report.dry_run
    with_failed = [o for o in report.outcomes if o.failed]
    with_bad = [o for o in report.outcomes if o.plan.unrecoverable]
    with_kept = [o for o in report.outcomes if o.plan.kept]
    moved = [o for o in report.outcomes if o.moved_to or (dry and o.plan.has_work)]
    recovered = "would be sent" if dry else "in the destination"
    lines = [f"{'recovered':<15} {_n(report.recovered, 'row')} {recovered}"]
    if not dry:
        lines.append(f"{'failed':<15} {_n(report.failed, 'row')}")
        lines.extend(f"{'':<15}   filed -> {FAILED}{o.name}" for o in with_failed)
    verb = "would go" if dry else "filed"
    lines.append(f"{'unrecoverable':<15} {_n(report.unrecoverable, 'line')}")
    lines.extend(f"{'':<15}   {verb} -> {UNRECOVERABLE}{o.name}" for o in with_bad)
    if with_kept:
        lines.append(f"{'left out':<15} {_n(report.kept, 'row')} not matching --error-matches")
        lines.extend(f"{'':<15}   kept in {kept_name(o.name)}" for o in with_kept)
    moved_verb = "would be moved" if dry else "moved"
    lines.append(f"{'replayed':<15} {_n(len(moved), 'object')} {moved_verb} under {REPLAYED}")
    return lines


def _not_taken_line(report: ReplayReport) -> list[str]:
    not_taken = _not_taken(report)
    return [f"{'not taken':<15} {not_taken}"] if not_taken else []


def _not_taken(report: ReplayReport) -> str:
    outside, ignored = report.selection.outside, report.selection.ignored
    parts = []
    if outside:
        parts.append(f"{_n(len(outside), 'object')} outside --since/--until")
    if ignored:
        names = ", ".join(ignored[:3]) + (", ..." if len(ignored) > 3 else "")
        parts.append(f"{_n(len(ignored), 'object')} not named like dead-end objects ({names})")
    return "; ".join(parts)


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"
