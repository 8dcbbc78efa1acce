"""``demo --monitor``'s evaluation against a real Prometheus scraping the services' metrics.

Four health servers serve the metrics the services register (their own metrics modules,
each on a registry of its own); Prometheus (``prometheus`` on PATH) scrapes them every
second under compose's job names. The alert conditions are evaluated as ``plowline demo
--monitor`` does: quiet while all is well, holding for the faults set on the metrics.
Without prometheus these tests skip, except under ``CI=true``, where they fail.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from plowline_cloud.metrics import HealthServer, MetricsRegistry, start_health_server
from plowline_deadletter.metrics import DeadLetterMetrics
from plowline_devstack.demo.monitor import Prometheus, evaluate, start_prometheus
from plowline_loader.metrics import LoaderMetrics
from plowline_mutator.metrics import MutatorMetrics
from plowline_repeater.metrics import RepeaterMetrics


@dataclass
class Watched:
    """The four services' metrics, their servers, and the Prometheus scraping them."""

    loader: LoaderMetrics
    mutator: MutatorMetrics
    repeater: RepeaterMetrics
    deadletter: DeadLetterMetrics
    servers: dict[str, HealthServer]
    ports: dict[str, int]
    prometheus: Prometheus


@pytest.fixture
def watched(tmp_path: Path) -> Iterator[Watched]:
    """Healthy services' metrics (the loader ready), scraped by a running Prometheus."""
    if shutil.which("prometheus") is None:
        how = "install it with `apt-get install prometheus`"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"prometheus is not on PATH and CI must evaluate the alerts: {how}")
        pytest.skip(f"prometheus is not on PATH: {how}")
    registries = {name: MetricsRegistry(name) for name in ("loader", "repeater", "deadletter")}
    loader = LoaderMetrics.create(registries["loader"])
    loader.ready.set(1)
    repeater = RepeaterMetrics.create(registries["repeater"])
    deadletter = DeadLetterMetrics.create(registries["deadletter"])
    mutator = MutatorMetrics()
    registries["mutator"] = mutator.registry
    servers = {
        name: start_health_server(0, registry, lambda: True, host="127.0.0.1")
        for name, registry in registries.items()
    }
    ports = {name: server.port for name, server in servers.items()}
    prometheus = start_prometheus(tmp_path, ports)
    try:
        prometheus.wait_scrapes(3)
        yield Watched(loader, mutator, repeater, deadletter, servers, ports, prometheus)
    finally:
        prometheus.stop()
        for server in servers.values():
            server.stop()


def _holding(watched: Watched) -> dict[str, tuple[str, ...]]:
    return {a.name: a.holding for a in evaluate(watched.prometheus).alerts if a.holds}


def test_prometheus_scrapes_every_service_under_compose_job_names(watched: Watched) -> None:
    """Each service's /metrics answers Prometheus under its compose job name."""
    up = {s["metric"]["job"]: s["value"][1] for s in watched.prometheus.query("up")}
    expected = dict.fromkeys(
        ("plowline-loader", "plowline-mutator", "plowline-repeater", "plowline-deadletter"), "1"
    )
    assert expected == up


def test_no_alert_condition_holds_while_all_is_well(watched: Watched) -> None:
    """Ready services that took no work hold no alert condition."""
    expected: dict[str, tuple[str, ...]] = {}
    assert expected == _holding(watched)


def test_faults_make_their_alert_conditions_hold(watched: Watched) -> None:
    """A loader not ready, a first dead-end, a column past the limit, a writer gone: each holds."""
    watched.loader.ready.set(0)
    watched.repeater.dead_ended.labels("loader_recovery_error").inc(3)
    watched.mutator.errors.labels("listener", "column_limit").inc()
    watched.servers["deadletter"].stop()
    time.sleep(10)  # the writer's scrapes fail for longer than they answered
    loader, deadletter = watched.ports["loader"], watched.ports["deadletter"]
    expected = {
        "PlowlineServiceNotReady": (f"{{instance=127.0.0.1:{loader}, job=plowline-loader}}",),
        "PlowlineDeadEnds": ("{}",),
        "PlowlineColumnsCannotBeAdded": ("{kind=column_limit}",),
        "PlowlineServiceDown": (f"{{instance=127.0.0.1:{deadletter}, job=plowline-deadletter}}",),
    }
    assert expected == _holding(watched)
