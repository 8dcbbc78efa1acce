"""The driver's vigil ends the loader when its micro-batch hangs, not only when the query fails."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

from plowline_cloud.chassis import EXIT_OK, EXIT_UNAVAILABLE
from plowline_cloud.liveness import ProgressWatch
from plowline_loader.health import Readiness
from plowline_loader.partition import PartitionReport
from plowline_loader.streaming import BatchWriter, StreamSettings
from plowline_loader.vigil import arm_hard_exit, keep_vigil
from support.timing import ManualClock

STALL = 60.0


class _HungWriter(BatchWriter):
    """A BatchWriter whose micro-batch action never returns (a Python worker hung mid-batch)."""

    def __init__(self, watch: ProgressWatch) -> None:
        partition: Any = SimpleNamespace(config=SimpleNamespace(exactly_once=False))
        super().__init__(partition, StreamSettings(checkpoint="unused"), Readiness(), watch=watch)
        self.attempted = threading.Event()
        self.release = threading.Event()

    def _run(
        self, frame: Any, attempt: int = 0, durable: frozenset[str] = frozenset()
    ) -> list[PartitionReport]:
        self.attempted.set()
        self.release.wait(30)
        return [PartitionReport()]


class _RunningQuery:
    """A query that runs (the clock moving on each wait) until ``ends_after`` waits, then fails."""

    def __init__(self, clock: ManualClock, ends_after: float = STALL * 20) -> None:
        self._clock = clock
        self._ends_after = ends_after
        self.waits = 0

    def awaitTermination(self, timeout: int) -> bool:
        self.waits += 1
        self._clock.now += timeout
        return self.waits > self._ends_after

    def exception(self) -> object:
        return "Job aborted due to stage failure" if self.waits > self._ends_after else None


def test_a_hung_micro_batch_ends_the_vigil_with_exit_code_1() -> None:
    """A batch in flight past the stall timeout ends the driver's wait with code 1, naming it."""
    clock = ManualClock()
    watch = ProgressWatch(STALL, clock)
    writer = _HungWriter(watch)
    batch = threading.Thread(target=writer, args=(None, 0))
    batch.start()
    writer.attempted.wait(5)
    query = _RunningQuery(clock)
    ending = keep_vigil(query, threading.Event(), watch, poll_s=1)
    writer.release.set()
    batch.join(5)
    assert (ending.code, query.waits) == (EXIT_UNAVAILABLE, STALL + 1)
    assert ending.cause is not None
    assert ending.cause.startswith("stalled")


def test_an_idle_loader_keeps_its_vigil_until_stopped() -> None:
    """Holding nothing for ten stall timeouts is not a stall: only SIGTERM ends the wait (code 0)."""
    clock = ManualClock()
    watch = ProgressWatch(STALL, clock)
    stop = threading.Event()

    class _StopLater(_RunningQuery):
        def awaitTermination(self, timeout: int) -> bool:
            if self.waits >= STALL * 10:
                stop.set()
            return super().awaitTermination(timeout)

    ending = keep_vigil(_StopLater(clock), stop, watch, poll_s=1)
    assert (ending.code, ending.cause, clock.now) == (EXIT_OK, None, STALL * 10 + 1)


def test_a_failed_query_ends_the_vigil_with_its_error() -> None:
    """A query that ended on its own gives code 1 and Spark's reason."""
    clock = ManualClock()
    ending = keep_vigil(
        _RunningQuery(clock, ends_after=0), threading.Event(), ProgressWatch(STALL, clock)
    )
    expected = (EXIT_UNAVAILABLE, "streaming query ended: Job aborted due to stage failure")
    assert expected == (ending.code, ending.cause)


def test_a_failed_query_makes_the_loader_not_alive() -> None:
    """Once the query has ended, /healthz's watch says not alive and names why, idle or not."""
    clock = ManualClock()
    watch = ProgressWatch(STALL, clock)
    keep_vigil(_RunningQuery(clock, ends_after=0), threading.Event(), watch)
    details = watch.details()
    expected = (False, "streaming query ended: Job aborted due to stage failure")
    assert expected == (details["alive"], details["streamEnded"])


def test_the_hard_exit_fires_when_the_clean_stop_hangs() -> None:
    """The armed timer calls the exit with the code once its time is up."""
    exited: list[int] = []
    done = threading.Event()

    def exit_now(code: int) -> None:
        exited.append(code)
        done.set()

    arm_hard_exit(EXIT_UNAVAILABLE, 0.05, exit_now)
    done.wait(5)
    assert exited == [EXIT_UNAVAILABLE]
