"""Chaos end to end, in every write mode: faults on, every service SIGKILLed three times.

Each mode runs the scenario ``plowline demo --chaos`` runs (``plowline_devstack.demo.chaos``) on
a stack of its own, sized to what it proves (kills and faults, not volume; the benches
and ``plowline demo --chaos --events N`` measure volume): 1,000 events (5% malformed, a
quarter three years old) published over 30 s with the 1% fault plan on, the loader, mutator, repeater and
dead-letter writer each SIGKILLed and restarted three times at seeded random moments.
The verdict (``chaos_verdict``) is exact per event id; duplicate rows must be 0 in the
modes that de-duplicate and are reported in the others; duplicate bad rows must be 0 in all.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from plowline_devstack.demo.chaos import ChaosPlan, run_chaos
from plowline_devstack.demo.chaos_command import DEFAULT_FAULTS
from plowline_devstack.demo.chaos_verdict import report_lines, verdict
from plowline_devstack.demo.write_modes import WRITE_MODES
from plowline_devstack.faults.plan import load_faults

_EVENTS = 1000
_WINDOW_S = 30.0
_KILLS = 3


@pytest.mark.timeout(900)
@pytest.mark.parametrize(
    "mode",
    # A group a mode: under xdist the modes spread over the workers (each its own stack).
    [
        pytest.param(name, id=name, marks=pytest.mark.xdist_group(f"chaos-{name}"))
        for name in WRITE_MODES
    ],
)
def test_e2e_chaos_places_every_event_once(mode: str, tmp_path: Path) -> None:
    """Under faults and 12 SIGKILLs, every event ends in its one place; the verdict has no failure."""
    plan = ChaosPlan(
        WRITE_MODES[mode],
        events=_EVENTS,
        seed=14,
        kills=_KILLS,
        window=_WINDOW_S,
        faults=load_faults(DEFAULT_FAULTS),
        settle_timeout=240.0,
    )
    judged = verdict(run_chaos(plan, tmp_path, print))
    details = "\n".join(report_lines(judged))
    print(details)
    expected: tuple[str, ...] = ()
    assert expected == judged.failures, details
