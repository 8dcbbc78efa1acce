"""Warm the executors' Python workers while the streaming query starts, not after it planned.

Before the first micro-batch the driver runs, one after the other, the data source's
creation, the streaming source runner, the read planning: ~3 s in which the executors
sit idle. Only then did the first batch's tasks ask for Python workers, and each worker,
before it pulled a message, imported the read path (pyarrow, pandas) and the Google
clients and built its ``BatchProcessor``: ~2 s more on the way to the first row
(issue 17). ``warm_workers`` runs a small job in a background thread as the query
starts: one task per task slot, each preparing its worker (``prepare_worker``). Spark
keeps the workers for reuse, so the batch's tasks get them ready.

Notes:
    Best effort, by design: a warm-up that fails or comes late costs nothing but its
    own time (the batch's tasks prepare their workers as before), and it changes no
    outcome: the processor it builds is the one the batch would build
    (``bootstrap.processor_for``, one per worker process). So its failure is logged,
    never raised. The job holds the task slots it uses for about a second; a batch
    planned meanwhile waits for them and then reuses the workers instead of forking
    more. It is a ``mapInArrow`` job, like the source's reads: Spark pools workers per
    runner environment, and an RDD job's workers would never serve a read. In
    exactly-once mode the processor runs after a shuffle, in an RDD job's workers
    (``streaming``), so there the warm-up prepares the reads only.
    Picklable: ``WorkerPreparation`` holds the ``WorkerConfig`` only.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import structlog
from plowline_core.errors import PlowlineError
from py4j.protocol import Py4JError  # type: ignore[import-untyped]  # no type hints
from pyspark.errors.exceptions.base import PySparkException
from pyspark.sql import SparkSession

from plowline_loader.bootstrap import WorkerConfig, processor_for

if TYPE_CHECKING:
    import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type hints

_log = structlog.get_logger("plowline.loader")
_READ_PATH = "pyspark.sql.worker.plan_data_source_read"  # the source's read(): pyarrow, pandas


def prepare_worker(config: WorkerConfig) -> str:
    """Import the read path, build this worker's subscriber and processor; return "" or why not.

    Notes:
        Runs in a forked Python worker, where gRPC may be loaded (see ``worker_daemon``).
    """
    import importlib

    from plowline_loader.source.subscription import subscriber_for

    importlib.import_module(_READ_PATH)
    try:
        subscriber_for(config.pubsub_emulator_host)
        if not config.exactly_once:  # there the processor runs in other workers (see notes)
            processor_for(config)
    except PlowlineError as error:
        return f"{type(error).__name__}: {error}"
    return ""


@dataclass(frozen=True, slots=True)
class WorkerPreparation:
    """The warm-up job's ``mapInArrow`` function: prepare the worker, yield the outcome."""

    config: WorkerConfig

    def __call__(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """Prepare the worker running this task; yield one row: "" or why it could not."""
        import pyarrow as pa

        for _ in batches:
            pass
        yield pa.RecordBatch.from_pydict({"problem": [prepare_worker(self.config)]})


def warm_workers(spark: SparkSession, config: WorkerConfig, tasks: int) -> threading.Thread:
    """Start preparing ``tasks`` Python workers in a background thread; return the thread."""
    thread = threading.Thread(
        target=_warm, args=(spark, config, max(1, tasks)), name="plowline-warm-workers", daemon=True
    )
    thread.start()
    return thread


def _warm(spark: SparkSession, config: WorkerConfig, tasks: int) -> None:
    started = time.monotonic()
    context = spark.sparkContext
    try:
        context.setJobDescription("plowline: warm the Python workers")
        # A SQL job, not an RDD one: Spark keeps one worker pool per kind of runner
        # (their environments differ), and the source's reads are Arrow SQL tasks.
        rows = spark.range(tasks, numPartitions=tasks).mapInArrow(
            WorkerPreparation(config), "problem string"
        )
        found = [row["problem"] for row in rows.collect() if row["problem"]]
    except (Py4JError, PySparkException) as error:  # Spark stopping, a job that failed
        found = [f"{type(error).__name__}: {(str(error).splitlines() or [''])[0][:300]}"]
    seconds = round(time.monotonic() - started, 3)
    if found:
        _log.warning(
            "python workers not warmed: the first batch prepares them",
            error=found[0],
            seconds=seconds,
        )
    else:
        _log.info("python workers warmed", workers=tasks, seconds=seconds)
