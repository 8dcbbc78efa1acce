"""The Grafana dashboard and its compose provisioning: what it shows and where it reads from.

Whether every metric it queries exists is checked against the running services'
/metrics (tests/e2e/deploy/test_metric_names.py).
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import yaml

SERVICES = {"loader": 8083, "mutator": 8080, "repeater": 8082, "deadletter": 8081}
#: What the dashboard must show, each with a metric that must feed it.
SHOWS = {
    "events in": "plowline_loader_events_in_total",
    "rows": "plowline_loader_good_total",
    "bad rows by type": "plowline_loader_bad_total",
    "failed inserts": "plowline_loader_failed_inserts_total",
    "re-inserts": "plowline_repeater_reinserted_total",
    "dead-ends": "plowline_repeater_dead_ended_total",
    "publish to row latency": "plowline_loader_publish_to_insert_seconds_bucket",
    "end-to-end latency (collector_tstamp to row)": (
        "plowline_loader_collector_to_insert_seconds_bucket"
    ),
    "end-to-end latency of re-inserted rows": (
        "plowline_repeater_collector_to_insert_seconds_bucket"
    ),
    "the repeater's detour": "plowline_repeater_publish_to_insert_seconds_bucket",
    "pubsub backlog": "plowline_deadletter_oldest_message_age_seconds",
    "mutator lag": "plowline_mutator_mutation_seconds_bucket",
    "readiness": "plowline_repeater_ready",
}


def _dashboard(deploy: Any) -> dict[str, Any]:
    path = deploy.repo / "deploy" / "monitoring" / "grafana" / "plowline.json"
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def _exprs(deploy: Any) -> list[str]:
    return [t["expr"] for p in _dashboard(deploy)["panels"] for t in p["targets"]]


@pytest.mark.parametrize(("what", "metric"), sorted(SHOWS.items()))
def test_dashboard_shows(deploy: Any, what: str, metric: str) -> None:
    """The dashboard has a query on the metric that shows this."""
    used = {name for expr in _exprs(deploy) for name in re.findall(r"plowline_[a-z0-9_]+", expr)}
    assert metric in used, what


def test_dashboard_panels_read_the_selected_data_source(deploy: Any) -> None:
    """Every panel and query reads ${datasource}, so one JSON serves compose, GKE and others."""
    sources = {
        json.dumps(node["datasource"], sort_keys=True)
        for panel in _dashboard(deploy)["panels"]
        for node in [panel, *panel["targets"]]
    }
    expected = {json.dumps({"type": "prometheus", "uid": "${datasource}"}, sort_keys=True)}
    assert expected == sources


def test_dashboard_panels_do_not_overlap(deploy: Any) -> None:
    """No two panels share a grid cell."""
    cells = [
        (x, y)
        for p in _dashboard(deploy)["panels"]
        for x in range(p["gridPos"]["x"], p["gridPos"]["x"] + p["gridPos"]["w"])
        for y in range(p["gridPos"]["y"], p["gridPos"]["y"] + p["gridPos"]["h"])
    ]
    expected = len(cells)
    assert expected == len(set(cells))


def test_compose_prometheus_scrapes_each_service_on_its_health_port(deploy: Any) -> None:
    """The compose Prometheus scrapes every service at <name>:<health port>."""
    config = yaml.safe_load((deploy.repo / "deploy" / "monitoring" / "prometheus.yml").read_text())
    targets = {
        t for job in config["scrape_configs"] for s in job["static_configs"] for t in s["targets"]
    }
    expected = {f"{name}:{port}" for name, port in SERVICES.items()}
    assert expected == targets


def test_compose_prometheus_loads_the_alert_rules(deploy: Any) -> None:
    """The compose Prometheus mounts deploy/monitoring/alerts.yaml where its config reads rules."""
    config = yaml.safe_load((deploy.repo / "deploy" / "monitoring" / "prometheus.yml").read_text())
    volumes = deploy.load_compose()["services"]["prometheus"]["volumes"]
    expected = ["./deploy/monitoring/alerts.yaml:/etc/prometheus/alerts.yaml:ro"]
    assert (expected, ["/etc/prometheus/alerts.yaml"]) == (
        [v for v in volumes if "alerts.yaml" in v],
        config["rule_files"],
    )


def test_compose_grafana_provisions_the_dashboard_and_data_source(deploy: Any) -> None:
    """Grafana mounts the provisioning files and the dashboard directory its provider reads."""
    monitoring = deploy.repo / "deploy" / "monitoring" / "grafana" / "provisioning"
    provider = yaml.safe_load((monitoring / "dashboards" / "plowline.yaml").read_text())
    source = yaml.safe_load((monitoring / "datasources" / "prometheus.yaml").read_text())
    volumes = deploy.load_compose()["services"]["grafana"]["volumes"]
    mounted = {v.split(":")[1]: v.split(":")[0] for v in volumes}
    path = provider["providers"][0]["options"]["path"]
    expected = (
        "./deploy/monitoring/grafana",
        "./deploy/monitoring/grafana/provisioning",
        "http://prometheus:9090",
    )
    assert expected == (
        mounted[path],
        mounted["/etc/grafana/provisioning"],
        source["datasources"][0]["url"],
    )
