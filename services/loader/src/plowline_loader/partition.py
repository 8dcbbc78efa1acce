"""The executor side of a micro-batch: run the BatchProcessor in a Spark task, then ack.

``StreamingPartition`` is the function the driver maps over the micro-batch's partitions
(``frame.rdd.mapPartitions(...).collect()``, the batch's one action). In the task it
hands the rows to S's ``AckingPartition`` (lease, process, ack or nack) with a processor
that runs ``BatchProcessor`` and records what happened, then yields one small
``PartitionReport``: that is how counts and latencies reach the driver's metrics.

Notes:
    A ``TransientError`` (registry, BigQuery or Pub/Sub failing) does not fail the task:
    every ack id of the partition is handed back (nacked, so redelivered at once) and the
    report carries the error, so the driver backs off and marks itself not ready. Any
    other exception fails the task (AckingPartition nacks first), as a bug should.
    Picklable: plain values and the picklable ``WorkerConfig``.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime

from plowline_core.errors import TransientError
from pyspark.sql import Row

from plowline_loader.bootstrap import WorkerConfig, processor_for
from plowline_loader.pipeline import BatchOutcome, InboundMessage
from plowline_loader.source import AckingPartition


@dataclass(frozen=True, slots=True)
class PartitionReport:
    """What one partition of a micro-batch became, sent back to the driver."""

    outcome: BatchOutcome = field(default_factory=BatchOutcome)
    transient_error: str | None = None


@dataclass(frozen=True, slots=True)
class AckSettings:
    """How the task keeps and settles its deliveries."""

    emulator_host: str | None = None
    ack_deadline_s: int = 60
    lease_interval_s: float = 20.0


@dataclass(frozen=True)
class StreamingPartition:
    """A picklable ``mapPartitions`` function: process, ack, report."""

    config: WorkerConfig
    acks: AckSettings = AckSettings()

    def __call__(self, rows: Iterable[Row]) -> Iterator[PartitionReport]:
        """Process the partition's messages, settle them, and yield one report."""
        recorder = _Recorder(self.config)
        acks = self.acks
        AckingPartition(recorder, acks.emulator_host, acks.ack_deadline_s, acks.lease_interval_s)(
            rows
        )
        yield recorder.report


class _Recorder:
    """The partition processor AckingPartition calls; keeps the report for the task."""

    def __init__(self, config: WorkerConfig) -> None:
        self._config = config
        self.report = PartitionReport()

    def __call__(self, rows: list[Row]) -> Collection[str] | None:
        messages = [
            InboundMessage(bytes(row["data"]), row["message_id"], _utc(row["publish_time"]))
            for row in rows
        ]
        try:
            outcome = processor_for(self._config).process(messages)
        except TransientError as error:
            # Not durable: hand every delivery back; the driver retries after a backoff.
            self.report = PartitionReport(transient_error=f"{type(error).__name__}: {error}")
            return [row["ack_id"] for row in rows]
        self.report = PartitionReport(outcome)
        return None


def _utc(moment: datetime | None) -> datetime | None:
    # Spark hands TimestampType to Python as a naive local time.
    if moment is None:
        return None
    return moment.astimezone(UTC)
