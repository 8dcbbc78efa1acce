"""A consumer whose stream has ended is not alive: /healthz 503 and exit 1, in every service."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import httpx
import pytest
from plowline_cloud.liveness import (
    EXIT_STOPPED,
    EXIT_STREAM_ENDED,
    Ending,
    ProgressWatch,
    keep_consuming,
)
from plowline_cloud.metrics import HealthServer, MetricsRegistry, start_health_server
from support.timing import ManualClock

LIMIT = 60.0
CAUSE = "streaming pull from projects/p/subscriptions/s ended (NotFound: 404 gone)"


class _Stream:
    """A stream that runs for ``runs`` looks, then has ended with ``CAUSE`` (never: -1)."""

    def __init__(self, runs: int = -1) -> None:
        self.runs = runs
        self.looks = 0

    def ended(self) -> str | None:
        self.looks += 1
        return CAUSE if 0 <= self.runs < self.looks else None


@pytest.fixture
def clock() -> ManualClock:
    """A fake monotonic clock."""
    return ManualClock(1000.0)


@pytest.fixture
def watch(clock: ManualClock) -> ProgressWatch:
    """A watch with a 60 s stall timeout on the fake clock."""
    return ProgressWatch(LIMIT, clock)


@pytest.fixture
def server(watch: ProgressWatch) -> Iterator[HealthServer]:
    """A health server whose /healthz follows the watch."""
    running = start_health_server(
        0, MetricsRegistry("x"), lambda: True, host="127.0.0.1", liveness=watch.details
    )
    yield running
    running.stop()


def test_an_ended_stream_ends_the_consumer_with_exit_1(watch: ProgressWatch) -> None:
    """The stream ending after three looks ends the loop with code 1 and the stream's cause."""
    ticks: list[int] = []
    ending = keep_consuming(
        _Stream(runs=3), watch, threading.Event(), lambda: ticks.append(1), name="test"
    )
    expected = (Ending(EXIT_STREAM_ENDED, CAUSE), 3)
    assert expected == (ending, len(ticks))


def test_an_ended_stream_makes_healthz_answer_503_with_the_cause(
    server: HealthServer, watch: ProgressWatch
) -> None:
    """Once the loop saw the stream end, /healthz answers 503 naming why, holding nothing."""
    keep_consuming(_Stream(runs=0), watch, threading.Event(), lambda: None, name="test")
    response = httpx.get(f"http://127.0.0.1:{server.port}/healthz", timeout=5.0)
    expected = (503, False, CAUSE, 0)
    body = response.json()
    assert expected == (response.status_code, body["alive"], body["streamEnded"], body["held"])


def test_a_stop_request_ends_the_consumer_with_exit_0(watch: ProgressWatch) -> None:
    """SIGTERM (the stop event) ends the loop with code 0 and leaves the watch alive."""
    stop = threading.Event()
    ending = keep_consuming(_Stream(), watch, stop, stop.set, name="test")
    expected = (Ending(EXIT_STOPPED), True)
    assert expected == (ending, watch.alive())


@pytest.mark.parametrize(
    ("end_on_stall", "expected"),
    [
        pytest.param(False, (EXIT_STOPPED, False), id="healthz-only"),
        pytest.param(True, (EXIT_STREAM_ENDED, True), id="loader-exits"),
    ],
)
def test_a_stall_ends_the_consumer_only_where_asked(
    watch: ProgressWatch, clock: ManualClock, end_on_stall: bool, expected: tuple[int, bool]
) -> None:
    """Held work stalled past the timeout ends the loop only with ``end_on_stall`` (the loader)."""
    watch.took()
    clock.now += LIMIT + 1
    stop = threading.Event()
    ticks: list[int] = []

    def tick() -> None:
        ticks.append(1)
        if len(ticks) == 5:
            stop.set()

    ending = keep_consuming(_Stream(), watch, stop, tick, name="test", end_on_stall=end_on_stall)
    assert expected == (ending.code, ending.stalled)


def test_the_first_cause_is_kept(watch: ProgressWatch) -> None:
    """A stream that ends twice keeps the first cause (the one that ended it)."""
    watch.end("first")
    watch.end("second")
    expected = ("first", False)
    assert expected == (watch.ended, watch.alive())
