"""``plowline demo --monitor``'s pieces that need no Prometheus: its config, inputs and report."""

from __future__ import annotations

import json

import pytest
import yaml
from plowline_devstack.demo import monitor
from plowline_devstack.demo.monitor import (
    AlertResult,
    MonitorError,
    MonitorReport,
    PanelResult,
    alert_rules,
    find_prometheus,
    panel_queries,
    scrape_config,
)

PORTS = {"loader": 41001, "mutator": 41002, "repeater": 41003, "deadletter": 41004}


def test_scrape_config_uses_compose_job_names_at_the_demo_ports() -> None:
    """Each service is scraped under compose's job name, on /metrics at its demo port, every second."""
    config = scrape_config(PORTS)
    jobs = {
        job["job_name"]: (job["metrics_path"], job["static_configs"][0]["targets"])
        for job in config["scrape_configs"]
    }
    expected = {
        "plowline-loader": ("/metrics", ["127.0.0.1:41001"]),
        "plowline-mutator": ("/metrics", ["127.0.0.1:41002"]),
        "plowline-repeater": ("/metrics", ["127.0.0.1:41003"]),
        "plowline-deadletter": ("/metrics", ["127.0.0.1:41004"]),
    }
    assert (expected, "1s") == (jobs, config["global"]["scrape_interval"])


def test_scrape_config_refuses_a_compose_target_the_demo_does_not_run() -> None:
    """A compose job whose service the demo lacks is an error, not a silent gap in the data."""
    with pytest.raises(MonitorError, match="deadletter"):
        scrape_config({k: v for k, v in PORTS.items() if k != "deadletter"})


def test_missing_prometheus_says_how_to_get_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without prometheus on PATH the error names the Debian package and the download page."""
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(MonitorError, match=r"apt-get install prometheus.*prometheus\.io/download"):
        find_prometheus()


def test_panel_queries_are_the_dashboards() -> None:
    """Every panel of the dashboard is evaluated, with every one of its queries."""
    path = monitor.MONITORING / "grafana" / "plowline.json"
    panels = json.loads(path.read_text())["panels"]
    expected = [(p["title"], len(p["targets"])) for p in panels]
    assert expected == [(title, len(queries)) for title, queries in panel_queries()]


def test_alert_rules_are_every_alert_of_alerts_yaml() -> None:
    """Every alert of deploy/monitoring/alerts.yaml is evaluated, with its expression as written."""
    groups = yaml.safe_load((monitor.MONITORING / "alerts.yaml").read_text())["groups"]
    expected = [(r["alert"], r["expr"]) for g in groups for r in g["rules"]]
    assert expected == alert_rules()


def test_report_names_panels_without_data_and_alerts_that_hold() -> None:
    """The report marks a panel whose queries gave nothing and an alert with the series it holds for."""
    report = MonitorReport(
        panels=(
            PanelResult("Events in / rows out", (("a", 1), ("b", 0))),
            PanelResult("Dead-ends", (("c", 0),)),
        ),
        alerts=(
            AlertResult("PlowlineDeadEnds", ("{namespace=demo}",)),
            AlertResult("PlowlineServiceDown", ()),
        ),
    )
    expected = [
        "dashboard panels (instant queries over the run):",
        "  data     Events in / rows out (series per query: 1, 0)",
        "  NO DATA  Dead-ends (series per query: 0)",
        "alert conditions (expressions without for:):",
        "  HOLDS    PlowlineDeadEnds for {namespace=demo}",
        "  quiet    PlowlineServiceDown",
    ]
    assert expected == report.lines()
