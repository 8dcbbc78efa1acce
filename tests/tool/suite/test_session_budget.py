"""The session budget: once ``PLOWLINE_TEST_BUDGET_S`` is spent, a test not yet run fails."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

CONFTEST = Path(__file__).resolve().parents[2] / "conftest.py"


def _run(tmp_path: Path, budget: str) -> str:
    """Run two trivial tests under the root conftest with ``budget``; return pytest's summary."""
    (tmp_path / "conftest.py").write_text(CONFTEST.read_text())
    (tmp_path / "test_two.py").write_text(
        "def test_one():\n    pass\n\ndef test_two():\n    pass\n"
    )
    # The copy loads the root conftest's plugins (``support.*``) from the suite's own folder.
    env = {**os.environ, "PLOWLINE_TEST_BUDGET_S": budget, "PYTHONPATH": str(CONFTEST.parent)}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:bqemulator",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(tmp_path),
            "-c",
            os.devnull,
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )
    return done.stdout + done.stderr


@pytest.mark.parametrize(
    ("budget", "expected"),
    [
        pytest.param("0", "2 errors", id="spent"),
        pytest.param("3600", "2 passed", id="left"),
        pytest.param("", "2 passed", id="unset"),
    ],
)
def test_tests_after_the_budget_fail_at_setup(tmp_path: Path, budget: str, expected: str) -> None:
    """With the budget spent each test errors at setup naming it; otherwise they run."""
    summary = _run(tmp_path, budget)
    assert expected in summary, summary
    assert ("PLOWLINE_TEST_BUDGET_S=0 s was spent" in summary) == (budget == "0"), summary
