"""Run every test tier, the independent ones side by side, and print each tier's wall time.

This is the README's test command and what ``.ci/run`` runs::

    uv run python tests/run_tiers.py              # every tier, in lanes, as CI does
    uv run python tests/run_tiers.py unit tool    # only these tiers (one lane each)
    uv run pytest -m unit                         # one tier, in this terminal

A tier is one ``pytest tests/<tier>`` process (with pytest-xdist workers where its tests are
independent), so each tier that needs the local stack starts its own, on free ports. Tiers
in one lane run one after the other; lanes run side by side (``PLAN`` sizes them for a
2-core machine). Each tier's output goes to ``<log dir>/<tier>.log``; a failing tier's log is printed at the
end. Exit status: 0 when every tier passed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
_PROGRESS_EVERY_S = 120.0


@dataclass(frozen=True)
class Tier:
    """One ``pytest tests/<name>`` run; ``workers`` > 1 spreads its files over xdist workers."""

    name: str
    workers: int = 1


@dataclass(frozen=True)
class Lane:
    """Tiers run one after another."""

    tiers: tuple[Tier, ...]


PLAN = (
    Lane((Tier("integration", workers=3), Tier("cluster"))),
    Lane((Tier("e2e", workers=2),)),
    Lane((Tier("unit"), Tier("deploy"), Tier("tool", workers=2), Tier("fuzz"))),
)
"""The lanes CI runs: the integration tier's wait-bound tests over 3 workers, then the
Spark cluster; the services as processes over 2 workers; the quick offline tiers in a third
lane that is done long before the other two."""


@dataclass
class Outcome:
    """What one tier's run ended with."""

    tier: Tier
    code: int
    wall_s: float
    log: Path
    summary: str = field(default="")


def _command(tier: Tier, extra: list[str], coverage: Path | None) -> list[str]:
    # The tier's folder, not ``-m``: collecting the other tiers' modules only to deselect
    # them would cost every run their imports.
    command = [
        sys.executable,
        "-m",
        "pytest",
        f"tests/{tier.name}",
        "-q",
        "-p",
        "no:cacheprovider",
        "--durations=15",
    ]
    if tier.workers > 1:
        command += ["-n", str(tier.workers), "--dist", "loadgroup"]
    if coverage is not None:
        command += ["--cov", "--cov-report="]
    return command + extra


def _summary(log: Path) -> str:
    """Return pytest's last line (``N passed, M skipped in T s``), or a note when absent."""
    lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
    return lines[-1].strip("= ") if lines else "(no output)"


def _run_tier(
    tier: Tier, logs: Path, extra: list[str], coverage: Path | None, say: _Printer
) -> Outcome:
    log = logs / f"{tier.name}.log"
    say(f"{tier.name}: started ({tier.workers} worker{'s' if tier.workers > 1 else ''})")
    started = time.monotonic()
    env = dict(os.environ)
    if coverage is not None:
        env["COVERAGE_FILE"] = str(coverage / f".coverage.{tier.name}")
    with log.open("wb") as out:
        code = subprocess.call(
            _command(tier, extra, coverage),
            cwd=REPO,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
    outcome = Outcome(tier, code, time.monotonic() - started, log, _summary(log))
    verdict = "passed" if code == 0 else f"FAILED (exit {code})"
    say(f"{tier.name}: {verdict} in {outcome.wall_s:.0f} s: {outcome.summary}")
    return outcome


class _Printer:
    """Lines to the terminal, one at a time, each with the time since the start."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._started = time.monotonic()

    def __call__(self, line: str) -> None:
        with self._lock:
            print(f"[{time.monotonic() - self._started:6.0f} s] {line}", flush=True)


def run(
    plan: tuple[Lane, ...], logs: Path, extra: list[str], coverage: Path | None = None
) -> list[Outcome]:
    """Run the lanes side by side; return every tier's outcome, in plan order."""
    say = _Printer()
    outcomes: dict[str, Outcome] = {}

    started: set[str] = set()

    def lane(tiers: tuple[Tier, ...]) -> None:
        for tier in tiers:
            started.add(tier.name)
            outcomes[tier.name] = _run_tier(tier, logs, extra, coverage, say)

    threads = [threading.Thread(target=lane, args=(each.tiers,)) for each in plan]
    for thread in threads:
        thread.start()
    while any(thread.is_alive() for thread in threads):
        next_word = time.monotonic() + _PROGRESS_EVERY_S
        for thread in threads:
            thread.join(timeout=max(0.0, next_word - time.monotonic()))
        if any(thread.is_alive() for thread in threads):
            running = sorted(started - set(outcomes))
            queued = [name for name in _names(plan) if name not in started]
            say(f"running: {', '.join(running)}; queued: {', '.join(queued) or 'none'}")
    return [outcomes[name] for name in _names(plan)]


def _names(plan: tuple[Lane, ...]) -> list[str]:
    return [tier.name for each in plan for tier in each.tiers]


def coverage_totals(data: Path) -> str:
    """Combine the tiers' coverage data in ``data``; return the line and branch figures."""
    files = sorted(str(path) for path in data.glob(".coverage.*"))
    combined = data / ".coverage"
    env = {**os.environ, "COVERAGE_FILE": str(combined)}
    coverage = [sys.executable, "-m", "coverage"]
    subprocess.run([*coverage, "combine", "--keep", *files], cwd=REPO, env=env, check=True)
    report = data / "coverage.json"
    subprocess.run([*coverage, "json", "-q", "-o", str(report)], cwd=REPO, env=env, check=True)
    totals = json.loads(report.read_text())["totals"]
    lines = 100 * totals["covered_lines"] / max(totals["num_statements"], 1)
    branches = 100 * totals["covered_branches"] / max(totals["num_branches"], 1)
    return (
        f"coverage of the product: lines {lines:.2f}% "
        f"({totals['covered_lines']}/{totals['num_statements']}), branches {branches:.2f}% "
        f"({totals['covered_branches']}/{totals['num_branches']}), "
        f"combined {totals['percent_covered']:.2f}% ({combined})"
    )


def _plan_for(names: list[str]) -> tuple[Lane, ...]:
    """The plan's tiers named, each in a lane of its own, or the whole plan when none is."""
    if not names:
        return PLAN
    known = {tier.name: tier for each in PLAN for tier in each.tiers}
    unknown = [name for name in names if name not in known]
    if unknown:
        raise SystemExit(f"unknown tier {', '.join(unknown)}: the tiers are {', '.join(known)}")
    return tuple(Lane((known[name],)) for name in names)


def main(argv: list[str] | None = None) -> int:
    """Parse the command line, run the tiers, print the table of wall times."""
    parser = argparse.ArgumentParser(
        description="Run plowline's test tiers side by side (as CI does) and print each "
        "tier's wall time. Arguments after -- go to every pytest run.",
        epilog="One tier in the terminal instead: uv run pytest -m unit (or tool, deploy, "
        "integration, e2e, cluster, fuzz).",
    )
    parser.add_argument(
        "tiers", nargs="*", help="tiers to run (default: all, in CI's lanes)", metavar="TIER"
    )
    parser.add_argument(
        "--logs",
        type=Path,
        default=None,
        help="directory for each tier's pytest output (default: a new temporary directory)",
    )
    parser.add_argument(
        "--coverage",
        action="store_true",
        help="measure the product's line and branch coverage (pytest-cov; slower) and print "
        "the combined figures at the end",
    )
    args, extra = parser.parse_known_args(argv)
    extra = [arg for arg in extra if arg != "--"]
    plan = _plan_for(args.tiers)
    logs = args.logs or Path(tempfile.mkdtemp(prefix="plowline-tiers-"))
    logs.mkdir(parents=True, exist_ok=True)
    print(f"logs: {logs}", flush=True)
    started = time.monotonic()
    coverage = logs / "coverage" if args.coverage else None
    if coverage is not None:
        coverage.mkdir(exist_ok=True)
    outcomes = run(plan, logs, extra, coverage)
    wall = time.monotonic() - started

    print("\ntier          wall     result")
    for outcome in outcomes:
        verdict = "passed" if outcome.code == 0 else f"FAILED ({outcome.code})"
        print(f"{outcome.tier.name:<12} {outcome.wall_s:6.0f} s  {verdict}: {outcome.summary}")
    print(f"{'all':<12} {wall:6.0f} s")
    if coverage is not None:
        print(coverage_totals(coverage))
    failed = [outcome for outcome in outcomes if outcome.code != 0]
    for outcome in failed:
        print(f"\n===== {outcome.tier.name}: {outcome.log} =====")
        sys.stdout.write(outcome.log.read_text(errors="replace"))
    sys.stdout.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
