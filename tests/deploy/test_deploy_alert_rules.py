"""The alert rules evaluated: promtool checks them and runs their rule tests.

deploy/monitoring/tests holds one promtool rule-test file per alert: series that must make
it fire after its ``for:`` (with the labels and annotations it carries) and series that must
not (a healthy pipeline, an idle one, a restart, a short spike). promtool ships with Debian's
``prometheus`` package; .ci/run installs it. Without promtool these tests skip, except under
``CI=true``, where they fail: CI must evaluate the rules.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
MONITORING = REPO / "deploy" / "monitoring"
RULES = MONITORING / "alerts.yaml"
RULE_TESTS = sorted((MONITORING / "tests").glob("*.yaml"))


@pytest.fixture(scope="module")
def promtool() -> str:
    """Return promtool's path; skip without it, fail without it under CI=true."""
    found = shutil.which("promtool")
    if found is not None:
        return found
    how = "install it with `apt-get install prometheus` (Debian's package carries promtool)"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"promtool is not on PATH and CI must evaluate the alert rules: {how}")
    pytest.skip(f"promtool is not on PATH: {how} to run the alert rule tests")


def _alerts() -> set[str]:
    data: dict[str, Any] = yaml.safe_load(RULES.read_text())
    return {rule["alert"] for group in data["groups"] for rule in group["rules"]}


def _cases() -> list[tuple[str, bool]]:
    """Return every (alert, fires) pair the rule-test files assert."""
    cases = []
    for path in RULE_TESTS:
        for test in yaml.safe_load(path.read_text())["tests"]:
            for check in test.get("alert_rule_test", []):
                cases.append((check["alertname"], bool(check.get("exp_alerts"))))
    return cases


def test_alert_rules_pass_promtool_check(promtool: str) -> None:
    """`promtool check rules` accepts deploy/monitoring/alerts.yaml."""
    result = subprocess.run(
        [promtool, "check", "rules", str(RULES)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("path", [pytest.param(p, id=p.stem) for p in RULE_TESTS])
def test_rule_tests_pass(promtool: str, path: Path) -> None:
    """Every rule-test file passes `promtool test rules`: each alert fires when, and only when, due."""
    result = subprocess.run(
        [promtool, "test", "rules", path.name],
        cwd=path.parent,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_alert_has_firing_and_silent_rule_tests() -> None:
    """Each alert of alerts.yaml has a rule test where it fires and one where it stays silent."""
    cases = set(_cases())
    covered = {alert: ((alert, True) in cases, (alert, False) in cases) for alert in _alerts()}
    expected = dict.fromkeys(_alerts(), (True, True))
    assert expected == covered


def test_rule_tests_load_the_committed_rules() -> None:
    """Every rule-test file evaluates deploy/monitoring/alerts.yaml, not a copy of its own."""
    loaded = {
        p.name: [(p.parent / f).resolve() for f in yaml.safe_load(p.read_text())["rule_files"]]
        for p in RULE_TESTS
    }
    expected = {p.name: [RULES.resolve()] for p in RULE_TESTS}
    assert expected == loaded
