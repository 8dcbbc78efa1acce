"""Liveness fails only when a service holds work and settles none of it for too long."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from plowline_cloud.liveness import ProgressWatch, register_watch_metrics
from plowline_cloud.metrics import HealthServer, MetricsRegistry, start_health_server
from support.timing import ManualClock

LIMIT = 60.0


@pytest.fixture
def clock() -> ManualClock:
    """A fake monotonic clock."""
    return ManualClock(1000.0)


@pytest.fixture
def watch(clock: ManualClock) -> ProgressWatch:
    """A watch with a 60 s stall timeout on the fake clock."""
    return ProgressWatch(LIMIT, clock)


def test_idle_service_stays_alive_for_ever(watch: ProgressWatch, clock: ManualClock) -> None:
    """A service that never received work is live however long it waits."""
    clock.advance(LIMIT * 100)
    expected = True
    assert expected == watch.alive()


def test_held_work_without_progress_fails_after_the_timeout(
    watch: ProgressWatch, clock: ManualClock
) -> None:
    """Work held one second past the stall timeout with no ack makes the service not live."""
    watch.took(3)
    clock.advance(LIMIT + 1)
    expected = (False, 3, LIMIT + 1)
    assert expected == (watch.alive(), watch.held, watch.stalled_s())


def test_held_work_within_the_timeout_is_alive(watch: ProgressWatch, clock: ManualClock) -> None:
    """Work held exactly the stall timeout is still live (the limit is inclusive)."""
    watch.took()
    clock.advance(LIMIT)
    expected = True
    assert expected == watch.alive()


def test_progress_restarts_the_clock(watch: ProgressWatch, clock: ManualClock) -> None:
    """An ack while other work is still held restarts the stall clock from that ack."""
    watch.took(2)
    clock.advance(LIMIT - 1)
    watch.progressed()
    clock.advance(LIMIT - 1)
    expected = (True, 1, LIMIT - 1)
    assert expected == (watch.alive(), watch.held, watch.stalled_s())


def test_all_work_settled_is_idle_again(watch: ProgressWatch, clock: ManualClock) -> None:
    """Once everything held is acked the service is idle: live however long it then waits."""
    watch.took()
    watch.progressed()
    clock.advance(LIMIT * 10)
    expected = (True, 0.0)
    assert expected == (watch.alive(), watch.stalled_s())


def test_give_back_is_not_progress(watch: ProgressWatch, clock: ManualClock) -> None:
    """Nacked work that comes straight back keeps the stall clock running (a nack loop)."""
    watch.took()
    clock.advance(LIMIT / 2)
    watch.gave_back()
    watch.took()  # redelivered at once
    clock.advance(LIMIT / 2 + 1)
    expected = False
    assert expected == watch.alive()


def test_work_long_after_a_give_back_starts_a_fresh_clock(
    watch: ProgressWatch, clock: ManualClock
) -> None:
    """Work arriving long after the last give-back is new work: its clock starts at arrival."""
    watch.took()
    watch.gave_back()
    clock.advance(LIMIT * 5)
    watch.took()
    clock.advance(1)
    expected = (True, 1.0)
    assert expected == (watch.alive(), watch.stalled_s())


def test_idle_after_a_give_back_is_alive(watch: ProgressWatch, clock: ManualClock) -> None:
    """A service that gave its work back and holds nothing is live (another took it)."""
    watch.took()
    clock.advance(LIMIT - 1)
    watch.gave_back()
    clock.advance(LIMIT * 3)
    expected = True
    assert expected == watch.alive()


def test_a_non_positive_timeout_is_refused(clock: ManualClock) -> None:
    """A zero stall timeout is a configuration error, never a watch that always fails."""
    with pytest.raises(ValueError, match="must be positive"):
        ProgressWatch(0, clock)


def test_details_say_what_is_held_and_for_how_long(
    watch: ProgressWatch, clock: ManualClock
) -> None:
    """The /healthz body names held work, seconds without progress and the limit."""
    watch.took(2)
    clock.advance(61.5)
    expected = {
        "alive": False,
        "held": 2,
        "secondsWithoutProgress": 61.5,
        "stallTimeoutSeconds": LIMIT,
    }
    assert expected == watch.details()


def test_gauges_read_the_watch_at_scrape_time(watch: ProgressWatch, clock: ManualClock) -> None:
    """work_held, stalled_seconds and ready are read from the watch when scraped."""
    registry = MetricsRegistry("repeater")
    register_watch_metrics(registry, "repeater", watch, lambda: True)
    watch.took(4)
    clock.advance(7)
    text = registry.render().decode()
    expected = [
        "plowline_repeater_work_held 4.0",
        "plowline_repeater_stalled_seconds 7.0",
        "plowline_repeater_ready 1.0",
    ]
    assert expected == [line for line in text.splitlines() if line in expected]


def test_failing_readiness_reads_as_not_ready(watch: ProgressWatch) -> None:
    """A readiness check that raises is exported as 0, and the scrape still succeeds."""
    registry = MetricsRegistry("deadletter")

    def broken() -> bool:
        raise RuntimeError("stream gone")

    register_watch_metrics(registry, "deadletter", watch, broken)
    expected = True
    assert expected == ("plowline_deadletter_ready 0.0" in registry.render().decode())


@pytest.fixture
def server(watch: ProgressWatch) -> Iterator[HealthServer]:
    """A health server whose /healthz follows the watch."""
    running = start_health_server(
        0, MetricsRegistry("x"), lambda: True, host="127.0.0.1", liveness=watch.details
    )
    yield running
    running.stop()


def test_healthz_answers_503_when_stalled(
    server: HealthServer, watch: ProgressWatch, clock: ManualClock
) -> None:
    """/healthz answers 503 with the watch's details once held work stalls."""
    watch.took()
    clock.advance(LIMIT + 5)
    response = httpx.get(f"http://127.0.0.1:{server.port}/healthz", timeout=5.0)
    expected = (503, False, 1)
    assert expected == (response.status_code, response.json()["alive"], response.json()["held"])


def test_healthz_answers_200_while_progressing(
    server: HealthServer, watch: ProgressWatch, clock: ManualClock
) -> None:
    """/healthz answers 200 while held work progresses within the timeout."""
    watch.took(2)
    clock.advance(LIMIT - 1)
    watch.progressed()
    response = httpx.get(f"http://127.0.0.1:{server.port}/healthz", timeout=5.0)
    expected = 200
    assert expected == response.status_code
