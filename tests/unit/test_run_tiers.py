"""``tests/run_tiers.py``, CI's test command: every tier is in its plan, once, as pytest runs it."""

from __future__ import annotations

from pathlib import Path

import pytest
import run_tiers

TESTS = Path(__file__).resolve().parents[1]


def _tier_folders() -> set[str]:
    """Folders under tests/ that hold test files (data and support hold none)."""
    return {
        folder.name
        for folder in TESTS.iterdir()
        if folder.is_dir() and any(folder.rglob("test_*.py"))
    }


def test_every_tier_folder_runs_in_the_plan_exactly_once() -> None:
    """A new tier folder that CI's plan leaves out, or runs twice, fails here."""
    planned = [tier.name for lane in run_tiers.PLAN for tier in lane.tiers]
    assert sorted(planned) == sorted(_tier_folders())


def test_every_tier_is_a_marker_the_suite_declares(pytestconfig: pytest.Config) -> None:
    """``pytest -m <tier>`` (what the README offers) selects by a declared marker."""
    declared = {line.split(":")[0] for line in pytestconfig.getini("markers")}
    assert _tier_folders() <= declared


def test_a_tier_runs_its_folder_with_workers_only_when_it_has_several() -> None:
    """One worker: plain pytest; several: xdist spreading the file groups."""
    alone = run_tiers._command(run_tiers.Tier("unit"), ["-x"], None)
    spread = run_tiers._command(run_tiers.Tier("integration", workers=3), [], None)
    assert ("tests/unit" in alone, "-n" in alone, alone[-1]) == (True, False, "-x")
    assert spread[spread.index("-n") : spread.index("-n") + 4] == ["-n", "3", "--dist", "loadgroup"]


def test_naming_tiers_runs_each_in_a_lane_of_its_own() -> None:
    """``run_tiers.py unit tool`` runs the two side by side."""
    lanes = run_tiers._plan_for(["unit", "tool"])
    assert [[tier.name for tier in lane.tiers] for lane in lanes] == [["unit"], ["tool"]]


def test_an_unknown_tier_is_refused_naming_the_tiers() -> None:
    """A typo stops the run with the list of tiers, not with an empty run."""
    with pytest.raises(SystemExit, match=r"unknown tier units: the tiers are .*unit"):
        run_tiers._plan_for(["units"])
