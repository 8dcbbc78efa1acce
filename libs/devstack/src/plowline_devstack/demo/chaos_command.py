"""``plowline demo --chaos``: the demo with faults on and every service SIGKILLed at random.

Runs ``chaos.run_chaos`` once per chosen write mode, each on a fresh stack in
``<data dir>/<mode>``, prints each run's kill schedule, figures and verdict
(``chaos_verdict.py``), then one line per mode. Exit 0 when every mode passes, 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from plowline_core.errors import ConfigError

from plowline_devstack.demo.chaos import ChaosPlan, run_chaos
from plowline_devstack.demo.chaos_verdict import ChaosVerdict, report_lines, verdict
from plowline_devstack.demo.run import EXAMPLES, clear_previous
from plowline_devstack.demo.write_modes import WRITE_MODES, write_mode
from plowline_devstack.faults.plan import load_faults

ALL_MODES = "all"
DEFAULT_FAULTS = EXAMPLES / "faults-1pct.toml"


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the ``--chaos`` options to the demo's parser."""
    group = parser.add_argument_group(
        "chaos (--chaos)",
        "Faults on in the local stack and each service SIGKILLed and restarted at random "
        "moments while events are published; the verdict is exact per event id. "
        "Example: plowline demo --chaos --events 50000 --write-mode exactly-once",
    )
    group.add_argument(
        "--chaos",
        action="store_true",
        help="run the chaos scenario instead of the plain demo (--events, --seed, --timeout and "
        "--data-dir apply; the never-fitting case, --keep and --workers do not)",
    )
    group.add_argument(
        "--write-mode",
        "--mode",
        default="insert-all",
        choices=[*WRITE_MODES, ALL_MODES],
        metavar="MODE",
        help="how the loader writes to BigQuery: insert-all (streaming inserts), exactly-once "
        "(Write API PENDING streams), write-api-default (load.stream default: a COMMITTED stream, rows visible at once), file-loads "
        "(load jobs), or all of them in turn (default %(default)s)",
    )
    group.add_argument(
        "--kills",
        type=int,
        default=3,
        metavar="N",
        help="SIGKILLs per service (loader, mutator, repeater, dead-letter writer), each "
        "followed by a restart (default %(default)s)",
    )
    group.add_argument(
        "--window",
        type=float,
        default=90.0,
        metavar="SECONDS",
        help="events are published evenly over this many seconds and the kills fall at "
        "random moments within it (default %(default)s)",
    )
    group.add_argument(
        "--faults",
        type=Path,
        default=DEFAULT_FAULTS,
        metavar="FILE",
        help="the fault plan the stand-ins start with (TOML or JSON; `plowline dev faults` "
        "lists them; default: examples/faults-1pct.toml, 1%% of BigQuery and Pub/Sub calls "
        "failing)",
    )


def run(args: argparse.Namespace) -> int:
    """Run the chaos scenario in each chosen write mode; return 0 if all pass, else 1 (2: bad options)."""
    began = time.monotonic()
    err = sys.stderr

    def say(text: str) -> None:
        print(f"[{time.monotonic() - began:6.1f} s] {text}", file=err, flush=True)

    try:
        faults = load_faults(args.faults)
    except ConfigError as error:
        print(f"plowline demo --chaos: {error}", file=err)
        return 2
    if args.kills < 0 or args.events <= 0 or args.window <= 0:
        print("plowline demo --chaos: --events and --window must be positive, --kills not negative",
              file=err)  # fmt: skip
        return 2
    names = list(WRITE_MODES) if args.write_mode == ALL_MODES else [args.write_mode]
    clear_previous(args.data_dir)
    judged: list[ChaosVerdict] = []
    for name in names:
        plan = ChaosPlan(
            write_mode(name),
            events=args.events,
            seed=args.seed,
            kills=args.kills,
            window=args.window,
            faults=faults,
            settle_timeout=args.timeout,
        )
        judged.append(verdict(run_chaos(plan, args.data_dir / name, say)))
        print()
        for line in report_lines(judged[-1]):
            print(line, flush=True)
        print()
    for one in judged:
        report = one.report
        settle = "-" if report.settle_s is None else f"{report.settle_s:.1f} s"
        acc = report.accounting
        print(
            f"{'PASS' if one.passed else 'FAIL'}  {report.plan.mode.name:<18} settle {settle:>8}"
            f"  duplicate rows {acc.duplicates if acc else '?':>5}"
            f"  duplicate bad rows {acc.duplicate_bad_rows if acc else '?':>5}"
            f"  wall {report.wall_s:.0f} s"
        )
    print(f"elapsed {time.monotonic() - began:.1f} s", flush=True)
    return 0 if all(one.passed for one in judged) else 1
