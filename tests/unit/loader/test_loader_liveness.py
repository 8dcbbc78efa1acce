"""The loader's liveness follows its micro-batches: held while in flight, progress when through."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

from plowline_cloud.liveness import ProgressWatch
from plowline_loader.batch.outcome import BatchOutcome
from plowline_loader.health import Readiness
from plowline_loader.partition import PartitionReport
from plowline_loader.streaming import BatchWriter, StreamSettings
from support.timing import ManualClock

STALL = 600.0


class _ScriptedWriter(BatchWriter):
    """A BatchWriter whose micro-batch action returns scripted partition reports (no Spark)."""

    def __init__(self, watch: ProgressWatch, reports: list[PartitionReport]) -> None:
        partition: Any = SimpleNamespace(config=SimpleNamespace(exactly_once=False))
        settings = StreamSettings(checkpoint="unused", backoff_initial_s=0.01, backoff_max_s=0.01)
        super().__init__(partition, settings, Readiness(), watch=watch)
        self._reports = reports
        self.attempted = threading.Event()

    def _run(
        self, frame: Any, attempt: int = 0, durable: frozenset[str] = frozenset()
    ) -> list[PartitionReport]:
        self.attempted.set()
        return self._reports


def test_a_batch_that_goes_through_is_progress() -> None:
    """After a committed batch nothing is held and the loader is live however long it idles."""
    clock = ManualClock()
    watch = ProgressWatch(STALL, clock)
    writer = _ScriptedWriter(watch, [PartitionReport(BatchOutcome())])
    writer(None, 0)  # type: ignore[arg-type]  # the scripted action never reads the frame
    clock.now += STALL * 10
    expected = (0, True)
    assert expected == (watch.held, watch.alive())


def test_a_batch_held_back_past_the_stall_timeout_fails_liveness() -> None:
    """A batch retried on a failing dependency for longer than the stall timeout is not live."""
    clock = ManualClock()
    watch = ProgressWatch(STALL, clock)
    writer = _ScriptedWriter(
        watch, [PartitionReport(BatchOutcome(), transient_error="BigQuery down")]
    )
    batch = threading.Thread(target=writer, args=(None, 0))
    batch.start()
    writer.attempted.wait(5)
    clock.now += STALL + 1
    during = (watch.held, watch.alive())
    writer.stop(5)
    batch.join(5)
    expected = ((1, False), (0, True))
    assert expected == (during, (watch.held, watch.alive()))
