"""Warming the Python workers as the query starts: the source's read tasks find them prepared."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from plowline_loader import bootstrap
from plowline_loader.bootstrap import WorkerConfig
from plowline_loader.source.processing import register_processing_source, report_of
from plowline_loader.worker_pool import warm_workers
from pyspark import cloudpickle
from pyspark.sql import DataFrame, SparkSession

if TYPE_CHECKING:
    from conftest import ModeRig

cloudpickle.register_pickle_by_value(sys.modules[__name__])

_FORMAT = "plowline-warm-check"


@dataclass(frozen=True)
class _Prepared:
    """A processing-source function: say whether this worker already holds ``config``'s processor."""

    config: WorkerConfig

    def __call__(self, rows: Iterable[dict[str, Any]]) -> Iterator[bool]:
        """Yield, before reading a row, whether this process built the processor already."""
        cached = bootstrap._processors.get(self.config)
        yield cached is not None and cached[0] == os.getpid()
        for _ in rows:  # never acked: the subscription is the test's own
            pass


def _collect(into: list[bool]) -> Callable[[DataFrame, int], None]:
    def write(frame: DataFrame, batch_id: int) -> None:
        into.extend(report_of(row) for row in frame.collect())

    return write


def test_the_sources_read_tasks_run_in_workers_the_warm_up_prepared(
    mode_rig: Callable[[dict[str, Any]], ModeRig],  # first: the stack starts before Spark
    spark: SparkSession,
    tmp_path: Path,
) -> None:
    """After the warm-up job, both read tasks of a processing-source batch find the worker's
    processor built: the warm-up and the reads share one pool of Python workers."""
    rig = mode_rig({"mode": "STREAMING_INSERTS", "retry": False})
    config = rig.config()
    rig.publish(["a", "b"])
    warm_workers(spark, config, 2).join(120)
    register_processing_source(spark, _FORMAT, _Prepared(config))
    found: list[bool] = []

    query = (
        spark.readStream.format(_FORMAT)
        .option("subscription", config.input_subscription)
        .option("emulatorHost", rig.stack.endpoints.pubsub_target)
        .option("numPartitions", "2")
        .option("pullTimeoutSeconds", "0.5")
        .load()
        .writeStream.foreachBatch(_collect(found))
        .option("checkpointLocation", str(tmp_path / "cp"))
        .start()
    )
    try:
        query.processAllAvailable()
    finally:
        query.stop()

    expected = [True, True]
    assert expected == found
