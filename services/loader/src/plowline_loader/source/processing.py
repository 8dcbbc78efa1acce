"""The ``pubsub`` source with the work done where the messages are read.

Usage::

    register_processing_source(spark, "plowline-load", process)
    reports = [report_of(row) for row in spark.readStream.format("plowline-load")...]

``process`` is a picklable function from a partition's rounds (``pulls.TaskRounds``: each
round a lazy iterator of ``PulledMessage``s that pulls as it is read) to a few picklable
results; in the loader it is ``StreamingPartition``: for each round transform, insert,
publish, ack, and at the end one ``PartitionReport``. The source's ``read()`` pulls the
partition's bounded slices exactly as ``pubsub`` does (one, or one after the other for a
long-lived task: the ``taskSeconds`` option), hands them to ``process`` in the same task,
and yields one row per result (``report``: the pickled result). The micro-batch's one
action is then a ``collect()`` of those reports.

Notes:
    Why (resident memory and CPU): with the plain source, the rows travel from the Python worker that read
    them to the JVM as Arrow, and from the JVM to a second Python worker (the
    ``mapPartitions`` function) as pickled rows. Here they never leave the worker that
    pulled them: one Python worker per running task instead of two, and no conversion:
    the pulled message itself is what the function reads (no row dict and no
    datetime per message).
    Every guarantee of ``pubsub`` and ``AckingPartition`` holds unchanged: the same pull
    budgets, receipt extensions, leases, ack-after-durable and nack-on-failure. The
    exactly-once mode cannot use it (its shuffle sits between reading and processing).
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from pyspark import cloudpickle
from pyspark.sql import Row, SparkSession
from pyspark.sql.datasource import DataSource, InputPartition
from pyspark.sql.types import BinaryType, StructField, StructType

from plowline_loader.source.pubsub_source import (
    PubSubDataSource,
    PubSubSourceOptions,
    PubSubStreamReader,
)
from plowline_loader.source.pulls import PubSubPartition, TaskRounds

if TYPE_CHECKING:
    from plowline_cloud.pubsub.pulled import PulledMessage

REPORT_SCHEMA = StructType([StructField("report", BinaryType(), False)])
"""One row per result of the partition function: the pickled result."""

TaskFunction = Callable[[Iterable[Iterable["PulledMessage"]]], Iterable[object]]


class ProcessingStreamReader(PubSubStreamReader):
    """Plan like ``pubsub``; in ``read`` pull, run the partition function, yield its results.

    Notes:
        The function travels pickled (``process_blob``) and is unpickled in ``read``
        only: the planning processes (create, plan, the streaming runner: one Python
        process each, in series before the first batch) then never import what it
        needs (the transform, the Google clients), which made up a third of their
        start-up CPU.
    """

    def __init__(self, options: PubSubSourceOptions, process_blob: bytes) -> None:
        super().__init__(options)
        self.process_blob = process_blob

    def __getstate__(self) -> dict[str, Any]:
        return {**super().__getstate__(), "process_blob": self.process_blob}

    @property
    def process(self) -> TaskFunction:
        """The partition function (unpickled on each use: ``read`` uses it once per task)."""
        function: TaskFunction = cloudpickle.loads(self.process_blob)
        return function

    def read(self, partition: InputPartition) -> Iterator[tuple[bytes]]:
        """Pull the partition's slices, process them in this task, yield the pickled results."""
        if not isinstance(partition, PubSubPartition):
            raise TypeError(f"pubsub source cannot read {type(partition).__name__}")
        # Lazy: the function pulls when it reads them (it may prepare the worker first).
        for result in self.process(TaskRounds(partition)):
            yield (pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL),)


def report_of(row: Row) -> Any:
    """Return the result carried by one row of a processing source."""
    return pickle.loads(row["report"])


def processing_source(name: str, process: TaskFunction) -> type[DataSource]:
    """Return a ``pubsub`` source class, named ``name``, that runs ``process`` in its tasks."""
    blob: bytes = cloudpickle.dumps(process, protocol=pickle.HIGHEST_PROTOCOL)  # type: ignore[no-untyped-call]

    class ProcessingPubSubDataSource(PubSubDataSource):
        format_name = name
        row_schema = REPORT_SCHEMA

        def stream_reader_for(self, options: PubSubSourceOptions) -> PubSubStreamReader:
            return ProcessingStreamReader(options, blob)

    return ProcessingPubSubDataSource


def register_processing_source(spark: SparkSession, name: str, process: TaskFunction) -> None:
    """Make ``spark.readStream.format(name)`` a ``pubsub`` source running ``process``."""
    spark.dataSource.register(processing_source(name, process))
