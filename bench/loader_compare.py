"""Latency, throughput and memory of this checkout's loader against another's, in one run.

Run: ``uv run python bench/loader_compare.py --baseline CHECKOUT [--rounds 2] [--events 60000]
[--rate 1000] [--seconds 90]``

The goal: cutting the loader's CPU costs nothing in publish → row latency at 1,000
events/s nor in memory (PSS ≤ 1.5 GiB). ``bench/loader.py`` measures both for the checkout
it is run from; figures from two separate runs differ by the machine's load more than by the
code. This script runs ``bench/loader.py`` of each checkout with that checkout's own
``.venv/bin/python`` (``CHECKOUT`` is a directory, e.g. a ``git worktree`` of main with its
venv synced), alternating rounds (baseline, this, baseline, this …) so both see the same
load, parses their tables and prints the medians side by side with this/baseline ratios.
A round whose bench fails stops the script with its output.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
MEASURES = {
    "sustained": (r"^sustained Pub/Sub → table\s+([\d,]+) events/s", "events/s"),
    "p50": (r"^publish → insert p50 @ \d+/s\s+([\d,]+) ms", "ms"),
    "p99": (r"^publish → insert p99 @ \d+/s\s+([\d,]+) ms", "ms"),
    "pss": (r"^loader PSS \(driver\+JVM\+workers\)\s+([\d,]+) MiB", "MiB"),
}


def parse(output: str) -> dict[str, float]:
    """Return the measures of one ``bench/loader.py`` table (raise if one is missing)."""
    found: dict[str, float] = {}
    for name, (pattern, _unit) in MEASURES.items():
        match = re.search(pattern, output, re.M)
        if match is None:
            raise ValueError(f"no {name!r} line in the bench's output:\n{output[-3000:]}")
        found[name] = float(match.group(1).replace(",", ""))
    return found


def run_once(checkout: Path, args: argparse.Namespace) -> dict[str, float]:
    """Run ``checkout``'s ``bench/loader.py`` under its own venv; return its measures."""
    python = checkout / ".venv" / "bin" / "python"
    command = [
        str(python), str(checkout / "bench" / "loader.py"),
        "--events", str(args.events), "--rate", str(args.rate), "--seconds", str(args.seconds),
    ]  # fmt: skip
    done = subprocess.run(command, cwd=checkout, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"{checkout}: bench/loader.py failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return parse(done.stdout)


def main() -> None:
    """Alternate the two checkouts' benches and print the medians and ratios."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--baseline", type=Path, required=True, help="the other checkout (with its .venv)"
    )
    parser.add_argument("--rounds", type=int, default=2, help="rounds per checkout (2)")
    parser.add_argument("--events", type=int, default=60_000, help="backlog (60000)")
    parser.add_argument("--rate", type=int, default=1000, help="events/s offered (1000)")
    parser.add_argument("--seconds", type=float, default=90.0, help="latency phase (90)")
    args = parser.parse_args()
    checkouts = {"baseline": args.baseline.resolve(), "this": HERE}
    runs: dict[str, list[dict[str, float]]] = {"baseline": [], "this": []}
    for round_ in range(1, args.rounds + 1):
        for name, checkout in checkouts.items():
            print(f"round {round_}/{args.rounds}: {name} ({checkout})", flush=True)
            runs[name].append(run_once(checkout, args))
            print(f"  {runs[name][-1]}", flush=True)
    print(f"medians of {args.rounds} rounds; this / baseline (< 1: this is lower)")
    for name, (_pattern, unit) in MEASURES.items():
        before = statistics.median(run[name] for run in runs["baseline"])
        after = statistics.median(run[name] for run in runs["this"])
        print(f"  {name:<10} baseline {before:>9,.0f} {unit:<9} this {after:>9,.0f} {unit:<9}"
              f" ratio {after / before:.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
