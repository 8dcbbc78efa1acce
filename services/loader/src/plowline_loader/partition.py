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
    every message of which nothing was written is handed back (nacked, so redelivered at
    once), every message partly written is parked (the driver writes the rest), no
    further round is read, and the report carries the error, so the driver backs off and
    marks itself not ready. Any other exception fails the task (AckingPartition nacks
    first), as a bug should.
    Picklable: plain values, the picklable ``WorkerConfig`` and the processor factory the
    driver passes in (``bootstrap.processor_for``): this module never imports the
    composition root.
    Each round's messages are settled by the one rule (``source.settlement``): acked,
    nacked, or parked for the driver's ``source.holding`` (``PartitionReport.parked``).
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
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
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
from plowline_loader.compressed_input import DEFAULT_DECOMPRESSION, Chunks, Decompression
from plowline_loader.record_split import SplitTracker
from plowline_loader.source.acking import AckingPartition, HandBack
from plowline_loader.source.settlement import Parcel, RecordAccount, Verdict, verdict
from plowline_loader.spark import worker_heap

if TYPE_CHECKING:
    from pyspark.sql import Row

    from plowline_loader.bootstrap import WorkerConfig


def chunking_for(config: WorkerConfig, messages: int) -> tuple[int, Decompression]:
    """Return how many items of a round of ``messages`` go into one ``insert``, and the
    decompression bounds that close a chunk earlier.

    Notes:
        FILE_LOADS takes the whole round in one chunk, counted in records and bytes alike
        (a round's compressed batches opened into one chunk, however many records they
        hold): each chunk is one load job, and BigQuery allows 1,500 load jobs per table
        per day (failures count), so the loader starts one per partition per trigger
        (``load.frequency``), as the README says. Its memory is then the round's records
        (the pull budgets bound the round). Chunks counted by deliveries in one place and
        by records in another made 3 batches of 1,000 records 1,000 load jobs (issue 37,
        finding 4).
        The other modes write ``CHUNK_MESSAGES`` items at a time, pipelined, a chunk
        closing early once its opened records reach ``maxBytesInBatch``; in exactly-once
        mode a chunk is one PENDING stream and its ledger rows.
    """
    if config.bigquery.load.mode is LoadKind.FILE_LOADS:
        whole = replace(config.decompression, max_bytes_in_batch=WHOLE_ROUND)
        return WHOLE_ROUND, whole
    return CHUNK_MESSAGES, config.decompression


WHOLE_ROUND = sys.maxsize
"""A chunk bound that never closes a chunk: FILE_LOADS's one load job per round."""


@dataclass(frozen=True, slots=True)
class PartitionReport:
    """What one partition of a micro-batch became, sent back to the driver."""

    outcome: BatchOutcome = field(default_factory=BatchOutcome)
    transient_error: str | None = None
    registry_outages: tuple[RegistryOutage, ...] = ()  # the Iglu registries that held it back
    unsettled_acks: int = 0  # ack ids whose ack or nack kept failing (they come back alone)
    parked: tuple[Parcel, ...] = ()  # deliveries partly durable or held: the driver keeps them
    executor: str = "driver"
    record_accounts: tuple[RecordAccount, ...] = ()  # split deliveries: the driver settles them
    durable_ids: tuple[str, ...] = ()  # exactly-once: message ids durable (a retry skips them)

    def then(self, later: PartitionReport) -> PartitionReport:
        """Return this report followed by ``later``'s, of a next round of the same task."""
        return PartitionReport(
            outcome=self.outcome.merge(later.outcome),
            transient_error=later.transient_error or self.transient_error,
            registry_outages=self.registry_outages + later.registry_outages,
            unsettled_acks=self.unsettled_acks + later.unsettled_acks,
            parked=self.parked + later.parked,
            executor=later.executor,
            record_accounts=self.record_accounts + later.record_accounts,
            durable_ids=self.durable_ids + later.durable_ids,
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
    processor: Callable[[WorkerConfig], ChunkProcessor]  # ``bootstrap.processor_for``
    ack_deadline_s: int = 60
    lease_interval_s: float = 20.0
    skip: frozenset[str] = frozenset()  # exactly-once: ids durable in an earlier attempt

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
        return self._run([split.messages(rows, self.skip)], split)

    def _run(
        self, rounds: Iterable[Iterable[PulledMessage]], split: SplitTracker | None
    ) -> Iterator[PartitionReport]:
        worker_heap.freeze_worker_heap()
        host = self.config.pubsub_emulator_host
        report: PartitionReport | None = None
        with worker_heap.task_collector(worker_heap.TASK_GC_THRESHOLD):
            for messages in rounds:
                recorder = _Recorder(self.config, self.processor, split)
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
    name_durable: bool = False,
) -> tuple[PartitionReport, list[str]]:
    """Process a partition's rows chunk by chunk, pipelined; return the report and the ack
    ids to hand back now (nothing of them written).

    Notes:
        A row that is a compressed batch is many events: the chunks are of its records,
        opened as they are needed (``compressed_input.Chunks``), each carrying the row's
        ack id. While one chunk is being written (``deliver``, in a second thread, mostly
        waiting on BigQuery), the next is transformed (``prepare``): the first insert
        leaves after one chunk is transformed, and the table always has the next request
        coming.
        Each row is then settled by the one rule (``source.settlement.verdict``) from
        what its records became: acked (not returned), handed back (returned: nothing of
        it was written), or parked (``PartitionReport.parked``: some records are durable
        and others wait, held for a schema, or stopped by a transient error or by the
        publish that failed after the insert, ``PartlyDelivered``): the driver keeps it
        and writes only the rest, so no record is written twice. After a
        ``TransientError`` the report carries the error. Any other exception propagates,
        once the chunk being written is done. ``name_durable`` (exactly-once) lists the
        ids of the rows acked in the report, so that a retried action skips them.
    """
    chunks = Chunks(rows, chunk_size, decompression)
    outcome = BatchOutcome()
    written = 0  # chunks whose outcomes are durable
    not_durable: frozenset[str] = frozenset()
    failure: TransientError | None = None
    with ThreadPoolExecutor(1, thread_name_prefix="plowline-deliver") as pool:
        writing: Future[BatchOutcome] | None = None
        try:
            for chunk in chunks:
                prepared = processor.prepare(chunk)
                if writing is not None:
                    outcome = outcome.merge(writing.result())
                    written, writing = written + 1, None
                writing = pool.submit(processor.deliver, prepared)
            if writing is not None:
                outcome = outcome.merge(writing.result())
                written, writing = written + 1, None
        except TransientError as error:
            failure = error
            # A chunk may have failed to prepare while the one before was being written:
            # settle that write (a write that failed is still ``writing``).
            late = writing.exception() if writing is not None else None
            if writing is not None and late is None:
                outcome = outcome.merge(writing.result())
                written += 1
            elif isinstance(late, PartlyDelivered):
                # Its insert returned: durable but for the records it names.
                outcome = outcome.merge(late.outcome)
                not_durable = late.not_durable
                written += 1
            elif late is not None and not isinstance(late, TransientError):
                raise late from error  # a bug while writing: fail the task
    handed_back: list[str] = []
    parked: list[Parcel] = []
    durable: list[str] = []
    if failure is None and not outcome.held_ids:  # the common case: every row durable
        names = tuple(row.message_id for row in rows) if name_durable else ()
        return PartitionReport(outcome, durable_ids=names), handed_back
    accounts = chunks.accounts(written, not_durable, outcome.held_ids)
    for row, account in zip(rows, accounts, strict=True):
        settled = verdict(account)
        if settled is Verdict.NACK:
            handed_back.append(row.ack_id)
        elif settled is Verdict.PARK:
            parked.append(Parcel(row, account.durable))
        elif name_durable:
            durable.append(row.message_id)
    report = PartitionReport(outcome, parked=tuple(parked), durable_ids=tuple(durable))
    if failure is None:
        return report, handed_back
    outages = failure.outages if isinstance(failure, RegistryUnavailable) else ()
    return replace(
        report, transient_error=f"{type(failure).__name__}: {failure}", registry_outages=outages
    ), handed_back


class _Recorder:
    """The partition processor AckingPartition calls; keeps the report for the task."""

    def __init__(
        self,
        config: WorkerConfig,
        processor: Callable[[WorkerConfig], ChunkProcessor],
        split: SplitTracker | None = None,
    ) -> None:
        self._config = config
        self._processor = processor
        self._split = split
        self.report = PartitionReport()

    def __call__(self, rows: list[PulledMessage]) -> HandBack:
        size, decompression = chunking_for(self._config, len(rows))
        processor = self._processor(self._config)
        keyed = self._split is not None
        self.report, handed_back = process_in_chunks(
            processor, rows, size, decompression, name_durable=keyed
        )
        parked = [parcel.ack_id for parcel in self.report.parked]
        if self._split is None or not self._split.ack_ids:
            return HandBack(handed_back, kept=parked)
        # Split deliveries: their records are in other tasks too; the driver settles them.
        accounts = self._split.accounts(set(handed_back), self.report.outcome.held_ids)
        split = self._split.ack_ids
        self.report = replace(
            self.report,
            record_accounts=accounts,
            parked=tuple(p for p in self.report.parked if p.ack_id not in split),
        )
        return HandBack(handed_back, kept=[*parked, *split])
