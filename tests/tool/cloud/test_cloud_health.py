"""The health server answers /healthz, /readyz and /metrics over real HTTP."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from plowline_cloud.metrics import HealthServer, MetricsRegistry, start_health_server


class _Readiness:
    def __init__(self) -> None:
        self.ready = False

    def __call__(self) -> bool:
        return self.ready


@pytest.fixture
def readiness() -> _Readiness:
    """A readiness flag the test flips."""
    return _Readiness()


@pytest.fixture
def metrics() -> MetricsRegistry:
    """A fresh per-service registry."""
    return MetricsRegistry("loader")


@pytest.fixture
def server(metrics: MetricsRegistry, readiness: _Readiness) -> Iterator[HealthServer]:
    """A health server on a free loopback port."""
    running = start_health_server(0, metrics, readiness, host="127.0.0.1")
    yield running
    running.stop()


def _get(server: HealthServer, path: str) -> httpx.Response:
    return httpx.get(f"http://127.0.0.1:{server.port}{path}", timeout=5.0)


def test_healthz_is_ok(server: HealthServer) -> None:
    """/healthz answers 200 while the process is alive."""
    expected = 200
    assert expected == _get(server, "/healthz").status_code


def test_readyz_not_ready(server: HealthServer) -> None:
    """/readyz answers 503 while ready() is false."""
    expected = 503
    assert expected == _get(server, "/readyz").status_code


def test_readyz_ready(server: HealthServer, readiness: _Readiness) -> None:
    """/readyz answers 200 once ready() is true."""
    readiness.ready = True
    expected = 200
    assert expected == _get(server, "/readyz").status_code


def test_readyz_failing_check_is_not_ready(metrics: MetricsRegistry) -> None:
    """A readiness check that raises means 503, not a broken server."""

    def broken() -> bool:
        raise RuntimeError("no")

    running = start_health_server(0, metrics, broken, host="127.0.0.1")
    try:
        expected = 503
        assert expected == _get(running, "/readyz").status_code
    finally:
        running.stop()


def test_metrics_text(server: HealthServer, metrics: MetricsRegistry) -> None:
    """/metrics serves the service's counters in the Prometheus text format."""
    metrics.counter("rows_inserted", "Rows inserted", labels=("table",)).labels("events").inc(3)
    body = _get(server, "/metrics").text
    assert 'plowline_rows_inserted_total{table="events"} 3.0' in body.splitlines()


def test_unknown_path(server: HealthServer) -> None:
    """Any other path is 404."""
    expected = 404
    assert expected == _get(server, "/nope").status_code


def test_stop_releases_the_port(metrics: MetricsRegistry, readiness: _Readiness) -> None:
    """After stop() the port no longer answers."""
    running = start_health_server(0, metrics, readiness, host="127.0.0.1")
    running.stop()
    with pytest.raises(httpx.ConnectError):
        _get(running, "/healthz")


def test_registry_returns_the_same_metric(metrics: MetricsRegistry) -> None:
    """Asking twice for a metric gives the same object (no duplicate registration)."""
    assert metrics.counter("bad_rows", "Bad rows") is metrics.counter("bad_rows", "Bad rows")


def test_registries_are_separate() -> None:
    """Two services' registries do not share metrics."""
    first, second = MetricsRegistry("a"), MetricsRegistry("b")
    first.counter("events", "Events").inc()
    assert b"plowline_events_total" not in second.render()


def test_readyz_with_details_answers_json(metrics: MetricsRegistry, readiness: _Readiness) -> None:
    """With details, /readyz answers {"ready": …, **details()} as JSON."""
    running = start_health_server(
        0, metrics, readiness, host="127.0.0.1", details=lambda: {"registries": ["central"]}
    )
    try:
        response = _get(running, "/readyz")
    finally:
        running.stop()
    expected = (503, "application/json", {"ready": False, "registries": ["central"]})
    assert expected == (response.status_code, response.headers["content-type"], response.json())


def test_readyz_details_that_raise_keep_the_status(
    metrics: MetricsRegistry, readiness: _Readiness
) -> None:
    """Details that fail are reported in the body; the status still follows ready()."""

    def broken() -> dict[str, object]:
        raise RuntimeError("no")

    readiness.ready = True
    running = start_health_server(0, metrics, readiness, host="127.0.0.1", details=broken)
    try:
        response = _get(running, "/readyz")
    finally:
        running.stop()
    expected = (200, {"ready": True, "detailsError": "RuntimeError: no"})
    assert expected == (response.status_code, response.json())
