"""A real Prometheus over the demo's four services: the dashboard shows data, no alert holds.

Its own pipeline (no hand-made conflicting column, no never-fitting orders: a healthy run),
with Prometheus (``prometheus`` on PATH, Debian's package) scraping the services every
second under compose's job names, as ``plowline demo --monitor`` does. After 600 events are
accounted for, every dashboard panel query and every alert expression (without its
``for:``) is evaluated as an instant query. Without prometheus these tests skip, except
under ``CI=true``, where they fail.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator

import pytest
from plowline_devstack.demo.generate import GeneratedLine
from plowline_devstack.demo.monitor import MonitorReport, evaluate, start_prometheus
from plowline_devstack.demo.run import DemoRun
from plowline_devstack.demo.services import ServiceError
from plowline_devstack.stack.lifecycle import StackStartError


@pytest.fixture(scope="module")
def report(
    tmp_path_factory: pytest.TempPathFactory,
    make_lines: Callable[..., list[GeneratedLine]],
    wait_accounted: Callable[..., int],
) -> Iterator[MonitorReport]:
    """What Prometheus shows once a healthy run has accounted for 600 events."""
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
        lines = make_lines(600, 29)
        run.publish(lines, rate=500.0)
        assert wait_accounted(run, len(lines)) == len(lines)
        prometheus.wait_scrapes()
        yield evaluate(prometheus)
    except (StackStartError, ServiceError) as error:
        pytest.fail(f"the pipeline did not start:\n{error}", pytrace=False)
    finally:
        if prometheus is not None:
            prometheus.stop()
        run.stop()


def test_e2e_every_dashboard_panel_shows_data(report: MonitorReport) -> None:
    """Every panel of the Grafana dashboard has a query that returned a number over the run."""
    expected: list[str] = []
    assert expected == [panel.title for panel in report.panels if not panel.has_data]


def test_e2e_no_alert_condition_holds_on_a_healthy_run(report: MonitorReport) -> None:
    """No alert expression holds for any series after a healthy run."""
    expected: dict[str, tuple[str, ...]] = {}
    assert expected == {alert.name: alert.holding for alert in report.alerts if alert.holds}
