"""The executor side of a micro-batch: run the BatchProcessor in a Spark task, then ack.

``StreamingPartition`` is the function every task of a micro-batch runs, inside the
source's ``read()`` (``source.processing``: over the pulled messages themselves, round
after round for a long-lived task: ``source.pulls.TaskRounds``) or, in exactly-once mode,
as ``frame.rdd.mapPartitions(partition.from_rows)`` (over the ``pubsub-records`` source's
rows, each made a ``PulledMessage``: ``record_split``; one round). It hands each round's
messages to ``AckingPartition`` (lease, process, ack or nack) with a processor that runs
``BatchProcessor`` over them in pipelined chunks (``process_in_chunks``), so a round is
durable and acked before the next is pulled, then yields one small ``PartitionReport``
of all its rounds: that is how counts and latencies reach the driver's metrics.

Notes:
    A ``TransientError`` (registry, BigQuery or Pub/Sub failing) does not fail the task:
    every ack id not yet durable is handed back (nacked, so redelivered at once), no
    further round is read, and the report carries the error, so the driver backs off and
    marks itself not ready. Any other exception fails the task (AckingPartition nacks
    first), as a bug should.
    Picklable: plain values and the picklable ``WorkerConfig``.
    In exactly-once mode a compressed batch may reach the task as some of its records
    (``record_split``): the task leases its delivery but leaves it unsettled
    (``HandBack.kept``) and reports which of its records are durable or held
    (``record_accounts``); the driver settles it once all the tasks reported
    (``source.split_settling``).
    Each report names the executor that ran the task (``executor_id``), so the driver can
    say where the work went: on a cluster, which executors read the source's partitions.
    The worker's heap: frozen at its second task, collected seldom while a task runs
    (``spark.worker_heap``).
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

from plowline_cloud.pubsub.pulled import PulledMessage
from plowline_core.config import LoadKind
from plowline_core.errors import RegistryUnavailable, TransientError
from plowline_core.iglu.outage import RegistryOutage

from plowline_loader.batch.message import Message
from plowline_loader.batch.outcome import BatchOutcome, PartlyDelivered
from plowline_loader.batch.sizes import CHUNK_MESSAGES
from plowline_loader.batch.split_acks import RecordAccount
from plowline_loader.bootstrap import WorkerConfig, processor_for
from plowline_loader.compressed_input import DEFAULT_DECOMPRESSION, Chunks, Decompression, Item
from plowline_loader.record_split import SplitTracker
from plowline_loader.source.acking import AckingPartition, HandBack
from plowline_loader.spark import worker_heap

if TYPE_CHECKING:
    from pyspark.sql import Row


def chunk_size_for(config: WorkerConfig, messages: int) -> int:
    """Return how many of a partition's ``messages`` go into one ``insert``.

    Notes:
        FILE_LOADS takes the whole partition in one chunk: each chunk is one load job, and
        BigQuery allows 1,500 load jobs per table per day (failures count), so the loader
        starts one per partition per window (``load.frequency``), as the README says.
        The other modes write ``CHUNK_MESSAGES`` at a time, pipelined; in exactly-once
        mode a chunk is one PENDING stream and its ledger rows. (Exactly-once wrote 500 at a
        time for a while: a stall seen once at 2,000 was the BigQuery stand-in's deadlock,
        fixed by its ``write-api-serving`` correction; at 2,000 the mode spends about a
        fifth less CPU, ``bench/write_mode_cost.py``.)
    """
    if config.bigquery.load.mode is LoadKind.FILE_LOADS:
        return max(messages, 1)
    return CHUNK_MESSAGES


@dataclass(frozen=True, slots=True)
class PartitionReport:
    """What one partition of a micro-batch became, sent back to the driver."""

    outcome: BatchOutcome = field(default_factory=BatchOutcome)
    transient_error: str | None = None
    registry_outages: tuple[RegistryOutage, ...] = ()  # the Iglu registries that held it back
    unsettled_acks: int = 0  # ack ids whose ack or nack kept failing (they come back alone)
    held_acks: tuple[str, ...] = ()  # held for a missing schema: delivered again later
    executor: str = "driver"
    record_accounts: tuple[RecordAccount, ...] = ()  # split deliveries: the driver settles them

    def then(self, later: PartitionReport) -> PartitionReport:
        """Return this report followed by ``later``'s, of a next round of the same task."""
        return PartitionReport(
            outcome=self.outcome.merge(later.outcome),
            transient_error=later.transient_error or self.transient_error,
            registry_outages=self.registry_outages + later.registry_outages,
            unsettled_acks=self.unsettled_acks + later.unsettled_acks,
            held_acks=self.held_acks + later.held_acks,
            executor=later.executor,
            record_accounts=self.record_accounts + later.record_accounts,
        )


_LOG_URL_EXECUTOR = re.compile(r"[?&]executorId=([^&]+)")


def executor_id() -> str:
    """Return the id of the Spark executor running this task (``"driver"`` in local mode).

    Notes:
        Python workers inherit their executor's environment: Kubernetes names the executor
        in ``SPARK_EXECUTOR_ID``; a standalone worker names it in the log URL it hands its
        executors (``SPARK_LOG_URL_STDERR``), and gives each its own ``SPARK_EXECUTOR_DIRS``;
        YARN runs it in a ``CONTAINER_ID``. Local mode runs tasks in the driver's JVM.
    """
    env = os.environ
    if "SPARK_EXECUTOR_ID" in env:
        return env["SPARK_EXECUTOR_ID"]
    found = _LOG_URL_EXECUTOR.search(env.get("SPARK_LOG_URL_STDERR", ""))
    if found:
        return found.group(1)
    if "CONTAINER_ID" in env:
        return env["CONTAINER_ID"]
    if "SPARK_EXECUTOR_DIRS" in env:
        return f"{socket.gethostname()}:{os.path.basename(env['SPARK_EXECUTOR_DIRS'])}"
    return "driver"


@dataclass(frozen=True)
class StreamingPartition:
    """A picklable ``mapPartitions`` function: process, ack, report.

    ``ack_deadline_s`` and ``lease_interval_s`` are the run's (``StreamSettings``): the
    deadline each lease extension asks for, and how often; the Pub/Sub endpoint is the
    config's (``WorkerConfig.pubsub_emulator_host``).
    """

    config: WorkerConfig
    ack_deadline_s: int = 60
    lease_interval_s: float = 20.0

    def __call__(self, rounds: Iterable[Iterable[PulledMessage]]) -> Iterator[PartitionReport]:
        """Process the partition's rounds of messages, settling each, and yield one report.

        Notes:
            Each round is read, processed and settled before the next is asked for; after
            a round that met a transient error no other is. The rounds must not have been
            read yet (lazy iterables): the heap is frozen before (see the module notes).
        """
        return self._run(rounds, None)

    def from_rows(self, rows: Iterable[Row]) -> Iterator[PartitionReport]:
        """Process a partition of the ``pubsub-records`` source's rows (exactly-once mode)."""
        split = SplitTracker()
        return self._run([split.messages(rows)], split)

    def _run(
        self, rounds: Iterable[Iterable[PulledMessage]], split: SplitTracker | None
    ) -> Iterator[PartitionReport]:
        worker_heap.freeze_worker_heap()
        host = self.config.pubsub_emulator_host
        report: PartitionReport | None = None
        with worker_heap.task_collector(worker_heap.TASK_GC_THRESHOLD):
            for messages in rounds:
                recorder = _Recorder(self.config, split)
                acking = AckingPartition(recorder, host, self.ack_deadline_s, self.lease_interval_s)
                settled = acking(messages)
                done = replace(recorder.report, unsettled_acks=settled.unsettled)
                report = done if report is None else report.then(done)
                if done.transient_error is not None:
                    break
        yield replace(report or PartitionReport(), executor=executor_id())


class ChunkProcessor(Protocol):
    """What ``process_in_chunks`` needs: ``BatchProcessor``'s two halves."""

    def prepare(self, messages: Sequence[Message]) -> Any:
        """Transform a chunk; write nothing."""
        ...

    def deliver(self, prepared: Any) -> BatchOutcome:
        """Write a prepared chunk; return its outcome once durable."""
        ...


def process_in_chunks(
    processor: ChunkProcessor,
    rows: list[PulledMessage],
    chunk_size: int = CHUNK_MESSAGES,
    decompression: Decompression = DEFAULT_DECOMPRESSION,
) -> tuple[PartitionReport, list[str]]:
    """Process a partition's rows chunk by chunk, pipelined; return the report and the ack
    ids to hand back (not durable).

    Notes:
        A row that is a compressed batch is many events: the chunks are of its records,
        opened as they are needed (``compressed_input.Chunks``), each carrying the row's
        ack id; the row is acked only once every chunk holding one of its records is
        written (an event's outcome is durable per record, the ack is per row).
        While one chunk is being written (``deliver``, in a second thread, mostly waiting
        on BigQuery), the next is transformed (``prepare``): the first insert leaves after
        one chunk is transformed, and the table always has the next request coming.
        After a ``TransientError`` the rows whose records are all in chunks already
        written stay written (they are acked); every other row is handed back and the
        report carries the error. Of a chunk whose insert returned before a publish
        failed (``PartlyDelivered``) only the rows of the records it names are handed
        back (with the rows that go on past the chunk): the rest is durable, and handing
        it back would insert it again on every retry. Any other exception propagates,
        once the chunk being written is done.
    """
    chunks = Chunks(rows, chunk_size, decompression)
    outcome = BatchOutcome()
    written = 0  # chunks whose outcomes are durable
    with ThreadPoolExecutor(1, thread_name_prefix="plowline-deliver") as pool:
        writing: Future[BatchOutcome] | None = None
        in_writing: list[Item] = []
        try:
            for chunk in chunks:
                prepared = processor.prepare(chunk)
                if writing is not None:
                    outcome = outcome.merge(writing.result())
                    written, writing = written + 1, None
                writing, in_writing = pool.submit(processor.deliver, prepared), chunk
            if writing is not None:
                outcome = outcome.merge(writing.result())
                written, writing = written + 1, None
        except TransientError as error:
            # A chunk may have failed to prepare while the one before was being written:
            # settle that write (a write that failed is still ``writing``).
            late = writing.exception() if writing is not None else None
            handed_back: set[str] = set()
            if writing is not None and late is None:
                outcome = outcome.merge(writing.result())
                written += 1
            elif isinstance(late, PartlyDelivered):
                # Its insert returned: ack what is durable, hand back only the rest.
                outcome = outcome.merge(late.outcome)
                handed_back = _acks_of(in_writing, late.not_durable)
                written += 1
            elif late is not None and not isinstance(late, TransientError):
                raise late from error  # a bug while writing: fail the task
            handed_back.update(row.ack_id for row in rows[chunks.first_unsettled(written) :])
            outages = error.outages if isinstance(error, RegistryUnavailable) else ()
            held = _held_acks(rows, outcome.held_ids, handed_back)
            report = PartitionReport(outcome, f"{type(error).__name__}: {error}", outages)
            report = replace(report, held_acks=held)
            return report, [row.ack_id for row in rows if row.ack_id in handed_back]
    return PartitionReport(outcome, held_acks=_held_acks(rows, outcome.held_ids, set())), []


class _Recorder:
    """The partition processor AckingPartition calls; keeps the report for the task."""

    def __init__(self, config: WorkerConfig, split: SplitTracker | None = None) -> None:
        self._config = config
        self._split = split
        self.report = PartitionReport()

    def __call__(self, rows: list[PulledMessage]) -> HandBack:
        size = chunk_size_for(self._config, len(rows))
        processor = processor_for(self._config)
        decompression = self._config.decompression
        self.report, handed_back = process_in_chunks(processor, rows, size, decompression)
        retry_s = self._config.schema_hold.retry_s
        if self._split is None or not self._split.ack_ids:
            return HandBack(handed_back, self.report.held_acks, retry_s)
        # Split deliveries: their records are in other tasks too; the driver settles them.
        accounts = self._split.accounts(set(handed_back), self.report.outcome.held_ids)
        self.report = replace(self.report, record_accounts=accounts)
        return HandBack(handed_back, self.report.held_acks, retry_s, self._split.ack_ids)


def _held_acks(
    rows: Sequence[PulledMessage], held_ids: frozenset[str], handed_back: set[str]
) -> tuple[str, ...]:
    """Return the ack ids of the rows holding a held message (a record ``<id>#<n>`` or itself)."""
    if not held_ids:
        return ()
    parents = {message_id.rpartition("#")[0] or message_id for message_id in held_ids}
    parents |= held_ids
    return tuple(
        dict.fromkeys(
            row.ack_id
            for row in rows
            if row.message_id in parents and row.ack_id not in handed_back
        )
    )


def _acks_of(chunk: Sequence[Item], message_ids: frozenset[str]) -> set[str]:
    return {item.ack_id for item in chunk if item.message_id in message_ids}
