"""A real Prometheus over the demo's four services: data and quiet when healthy, alerts on faults.

Its own pipeline (no hand-made conflicting column, no never-fitting orders: a healthy run),
with Prometheus (``prometheus`` on PATH, Debian's package) scraping the services every
second under compose's job names, as ``plowline demo --monitor`` does. After 600 events are
accounted for, every dashboard panel query and every alert expression (without its
``for:``) is evaluated as an instant query. Then the faults: orders that can never fit,
and the loader stopped while events arrive; evaluated again, exactly their alerts hold.
Without prometheus these tests skip, except under ``CI=true``, where they fail.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
from plowline_devstack.demo.generate import GeneratedLine
from plowline_devstack.demo.monitor import MonitorReport, Prometheus, evaluate, start_prometheus
from plowline_devstack.demo.run import DemoRun
from plowline_devstack.demo.services import ServiceError
from plowline_devstack.stack.lifecycle import StackStartError
from support.timing import wait_for

_JOBS = ("plowline-loader", "plowline-mutator", "plowline-repeater", "plowline-deadletter")


@dataclass
class Monitored:
    """The e2e pipeline and the Prometheus watching it."""

    run: DemoRun
    prometheus: Prometheus


@pytest.fixture(scope="module")
def monitored(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Monitored]:
    """A pipeline of its own, and Prometheus scraping its four services every second."""
    if shutil.which("prometheus") is None:
        how = "install it with `apt-get install prometheus`"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"prometheus is not on PATH and CI must run the monitoring e2e: {how}")
        pytest.skip(f"prometheus is not on PATH: {how} to run the monitoring e2e")
    work = tmp_path_factory.mktemp("e2e-monitoring")
    run = DemoRun(work)
    prometheus = None
    try:
        run.start(timeout=240.0)
        ports = {name: service.spec.port for name, service in run.services.items()}
        prometheus = start_prometheus(work / "prometheus", ports)
        yield Monitored(run, prometheus)
    except (StackStartError, ServiceError) as error:
        pytest.fail(f"the pipeline did not start:\n{error}", pytrace=False)
    finally:
        if prometheus is not None:
            prometheus.stop()
        run.stop()


@pytest.fixture(scope="module")
def report(
    monitored: Monitored,
    make_lines: Callable[..., list[GeneratedLine]],
    wait_accounted: Callable[..., int],
) -> MonitorReport:
    """What Prometheus shows once a healthy run has accounted for 600 events."""
    lines = make_lines(600, 29)
    monitored.run.publish(lines, rate=500.0)
    assert wait_accounted(monitored.run, len(lines)) == len(lines)
    monitored.prometheus.wait_scrapes()
    return evaluate(monitored.prometheus)


@pytest.fixture(scope="module")
def faulted(
    monitored: Monitored,
    report: MonitorReport,
    make_lines: Callable[..., list[GeneratedLine]],
    wait_accounted: Callable[..., int],
) -> MonitorReport:
    """After the healthy run: orders that can never fit, then the loader stopped under traffic.

    The never-fitting orders are the demo's (a hand-made column of the wrong type; the
    repeater's backoff cut to 5 s so they dead-end soon). Then the loader stops while 100
    more events arrive, and Prometheus watches until the loader has been down longer than
    it was up in the alert's window.
    """
    run, prometheus = monitored.run, monitored.prometheus
    run.add_conflicting_column()
    run.use_backoff(5.0)
    legacy = make_lines(40, 31, never_fitting=20)
    run.publish(legacy, rate=500.0)
    accounted = 600 + len(legacy)
    assert wait_accounted(run, accounted) == accounted
    run.services["loader"].stop()
    run.publish(make_lines(100, 37), rate=500.0)
    down = 'avg_over_time(up{job="plowline-loader"}[10m]) < 0.5'
    wait_for(lambda: prometheus.query(down), 300.0, every_s=1.0)
    prometheus.wait_scrapes()
    return evaluate(prometheus)


def test_e2e_every_dashboard_panel_shows_data(report: MonitorReport) -> None:
    """Every panel of the Grafana dashboard has a query that returned a number over the run."""
    expected: list[str] = []
    assert expected == [panel.title for panel in report.panels if not panel.has_data]


def test_e2e_no_alert_condition_holds_on_a_healthy_run(report: MonitorReport) -> None:
    """No alert expression holds for any series after a healthy run."""
    expected: dict[str, tuple[str, ...]] = {}
    assert expected == {alert.name: alert.holding for alert in report.alerts if alert.holds}


def test_e2e_faults_make_their_alert_conditions_hold(faulted: MonitorReport) -> None:
    """Orders that never fit hold PlowlineDeadEnds, the loader stopped PlowlineServiceDown.

    The hand-made column may also hold PlowlineColumnsCannotBeAdded (kind conflict): it does
    when the loader, not yet knowing that column, asked the mutator for it.
    """
    holding = {alert.name: alert.holding for alert in faulted.alerts if alert.holds}
    may_hold = {"PlowlineColumnsCannotBeAdded": ("{kind=conflict}",)}
    down = holding.get("PlowlineServiceDown", ())
    expected = {"PlowlineDeadEnds": ("{}",), "down": ["plowline-loader"], "unexpected": {}}
    actual = {
        "PlowlineDeadEnds": holding.get("PlowlineDeadEnds"),
        "down": sorted(job for job in _JOBS if any(f"job={job}}}" in labels for labels in down)),
        "unexpected": {
            name: labels
            for name, labels in holding.items()
            if name not in ("PlowlineDeadEnds", "PlowlineServiceDown")
            and may_hold.get(name) != labels
        },
    }
    assert expected == actual, holding
