"""The driver side of the streaming loader: the Pub/Sub query, its foreachBatch, a graceful stop.

Each micro-batch runs exactly one Spark action per attempt, a ``collect()`` of one small
``PartitionReport`` per task: the tasks pull, process and ack on the executors, inside
the source's ``read()`` (``source.processing``: the rows never leave the Python worker
that pulled them), and the driver merges the reports into the metrics. A task may be long-lived
(``StreamSettings.task_seconds``): it then pulls, processes and acks round after round
for that long (``source.pulls.TaskRounds``), so under load the driver plans a
micro-batch once per ``task_seconds`` rather than once per slice; its report, and so the
metrics, come when it ends. In exactly-once
mode the rows are shuffled by event id first, so there the source is ``pubsub-records``
(compressed batches read as one row per record), the action is
``frame.rdd.mapPartitions(StreamingPartition(...).from_rows)``, and the driver then acks
a batch split over tasks once every record is durable (``source.split_settling``).
When a partition reports a transient error (its deliveries not yet durable were
nacked), the driver marks itself not ready, waits with exponential backoff and runs the
action again; readiness returns with the first batch that goes through.

A retried action meets stale deliveries in exactly-once mode only. There Spark reuses
the shuffle's output: the retry pulls nothing and runs the very rows of the first
attempt again, under their old ack ids, those acked (their rows durable) and those
nacked alike. The ledger skips every row already committed, and the task writes the
rest (a bad line's bad row is published again: a copy the dead-letter writer absorbs);
acking a stale id is a no-op for Pub/Sub, so each nacked message comes back in a later
micro-batch, where the ledger skips it. With the processing source the planned
partitions are reused: each task pulls again (the nacked messages among others) but
does not replay its share of the driver's probe deliveries (the action's attempt travels
to the tasks as a Spark local property, ``source.pulls.retried_action``): the first
attempt acked the share with its durable rows or nacked it.

A Spark job that fails (an executor lost with the shuffle outputs of exactly-once mode:
the source is not replayable, so Spark cannot re-run the lost map tasks and aborts the
job) is handled the same way, at most ``MAX_JOB_FAILURES`` times in a row: nothing of
the failed attempt was acked unless it was durable, so running the action again is
correct; past that the error propagates and the query fails, as a bug should.

Notes:
    Stopping (SIGTERM): new micro-batches are skipped, the one in flight finishes (its
    acks done; long-lived tasks within ``task_seconds`` and a slice, which is why that is
    at most half the grace period), then the query stops. A skipped batch acks nothing; its messages come back
    after their ack deadline. Pub/Sub offsets mean nothing (see the source), so a fresh
    checkpoint directory on every start is fine.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING

import structlog
from plowline_cloud.liveness import ProgressWatch
from plowline_core.config import LoadKind
from plowline_core.webhook import SetupProblem, setup_problem
from py4j.protocol import Py4JJavaError  # type: ignore[import-untyped]  # no type hints
from pyspark.errors.exceptions.captured import CapturedException
from pyspark.sql import Column, DataFrame, SparkSession, functions
from pyspark.sql.streaming.query import StreamingQuery

from plowline_loader.batch.event_key import EVENT_ID_INDEX
from plowline_loader.batch.outcome import BatchOutcome
from plowline_loader.bootstrap import WorkerConfig, processor_for, task_processor
from plowline_loader.health import Readiness
from plowline_loader.metrics import LoaderMetrics
from plowline_loader.partition import PartitionReport, StreamingPartition
from plowline_loader.source.holding import Holding
from plowline_loader.source.processing import register_processing_source, report_of
from plowline_loader.source.pulls import ATTEMPT_PROPERTY, TASK_SECONDS
from plowline_loader.source.record_source import RECORDS_FORMAT, register_record_source
from plowline_loader.source.split_settling import settle_split

if TYPE_CHECKING:
    from plowline_cloud.pubsub.subscription import Subscription

_log = structlog.get_logger("plowline.loader")

MAX_JOB_FAILURES = 3
"""Failed Spark jobs in a row a batch survives (a lost executor); one more fails the query."""

#: 2.x's setup errors (BigQuery's notFound, accessDenied): retried with ``retries.setupErrors``.
_SETUP_ERRORS = (SetupProblem.TABLE_MISSING, SetupProblem.NO_ACCESS)

PROCESSING_FORMAT = "plowline-load"
"""The source format that pulls and processes in the same task (see ``source.processing``)."""


@dataclass(frozen=True, slots=True)
class StreamSettings:
    """How the query pulls, batches and retries."""

    checkpoint: str
    partitions: int = 2
    max_messages: int = 10_000
    max_bytes: int = 16 * 1024 * 1024
    pull_timeout_s: float = 1.0
    ack_deadline_s: int = 60
    lease_interval_s: float = 20.0
    trigger_interval_s: float = 0.0
    task_seconds: float = TASK_SECONDS  # 0: one slice a task (``long_lived_task_s``)
    backoff_initial_s: float = 0.5
    backoff_max_s: float = 30.0
    setup_backoff_s: float | None = None  # a setup error's first wait (None: as any error)

    def retry_delay(self, attempt: int, error: str) -> float:
        """Return the wait before retry ``attempt`` of a batch held back by ``error``.

        Notes:
            2.x's ``retries``: a setup error (the table missing, no access:
            ``plowline_core.webhook.setup_problem``) doubles from ``setup_backoff_s``,
            any other from ``backoff_initial_s``; both capped at ``backoff_max_s`` (a
            setup error's at least at its first wait). Neither is ever given up.
        """
        setup = self.setup_backoff_s
        if setup is not None and setup_problem(error) in _SETUP_ERRORS:
            return backoff_delay(attempt, setup, max(setup, self.backoff_max_s))
        return backoff_delay(attempt, self.backoff_initial_s, self.backoff_max_s)


def by_event_id(frame: DataFrame, partitions: int) -> DataFrame:
    """Return ``frame`` over ``partitions`` tasks, every copy of an event id in one task.

    Notes:
        Exactly-once mode only (see ``batch.event_key``): one shuffle, still one action.
        The key is ``event_id_key``, as a Spark expression (``key_column``); a compressed
        batch that opens cleanly is one row per record by then, each keyed by its own id.
    """
    return frame.repartition(partitions, key_column())


def key_column() -> Column:
    """Return ``exactly_once.event_id_key`` of the ``data`` column, as a Spark expression.

    Notes:
        The key never raises, whatever the bytes (Spark 4 runs SQL in ANSI mode, where
        ``decode`` refuses invalid UTF-8 and ``getItem`` an index past the end, failing
        the query on every restart): the bytes are read as a string without decoding,
        ``try_element_at`` gives NULL for a line with fewer fields, and such a line is
        keyed by its whole text (copies of one message still meet; lines that are not
        TSV spread over the tasks instead of piling into one). They become bad rows in
        their task as before. Lower-cased: the ledger keys on the canonical id
        (``decode_uuid``), so two spellings of one id must meet in one task too.
        A compressed batch that did not open cleanly (``record_split``) has no tab either
        (mostly): it is keyed by its whole bytes, so its copies meet.
    """
    line = functions.col("data").cast("string")
    fields = functions.split(line, "\t", EVENT_ID_INDEX + 2)
    event_id = functions.try_element_at(fields, functions.lit(EVENT_ID_INDEX + 1))
    return functions.lower(functions.coalesce(event_id, line))


def long_lived_task_s(task_seconds: float, config: WorkerConfig) -> float:
    """Return how long a task reads slice after slice under ``config`` (0: one slice).

    Notes:
        FILE_LOADS starts one load job per task (BigQuery's daily quota of load jobs per
        table), so its tasks read one slice each, at the trigger interval; exactly-once
        mode shuffles its rows between reading and writing (its source reads one slice).
    """
    if config.exactly_once or config.bigquery.load.mode is LoadKind.FILE_LOADS:
        return 0.0
    return task_seconds


def backoff_delay(attempt: int, initial_s: float, maximum_s: float) -> float:
    """Return the wait before retry ``attempt`` (1, 2, …): doubling from ``initial_s``, capped."""
    return float(min(maximum_s, initial_s * 2 ** max(0, attempt - 1)))


class BatchWriter:
    """The foreachBatch function: run the partitions, record, back off on transient errors."""

    def __init__(
        self,
        partition: StreamingPartition,
        settings: StreamSettings,
        readiness: Readiness,
        metrics: LoaderMetrics | None = None,
        observer: Callable[[BatchOutcome], None] | None = None,
        watch: ProgressWatch | None = None,
        holding: Holding | None = None,
    ) -> None:
        self._partition = partition
        self._holding = holding
        self._watch = watch
        self._observer = observer
        self._settings = settings
        self._readiness = readiness
        self._metrics = metrics
        self._keyed = partition.config.exactly_once
        self._stopping = threading.Event()
        self._busy = threading.Lock()
        self.totals = BatchOutcome()
        self.events_by_executor: Counter[str] = Counter()
        self.transient_failures = 0
        self.job_failures = 0
        self.split_deliveries = Counter[str]()  # acked, nacked, later, unsettled

    def __call__(self, frame: DataFrame, batch_id: int) -> None:
        """Process one micro-batch; return once its outcomes are durable and acked."""
        if self._stopping.is_set():
            return
        if self._keyed:
            frame = by_event_id(frame, self._settings.partitions)
        with self._busy:
            if self._watch is not None:
                self._watch.took()
            try:
                self._until_done(frame, batch_id)
            except BaseException:
                self._settled(progress=False)
                raise

    def _until_done(self, frame: DataFrame, batch_id: int) -> None:
        """Run the batch until it goes through (progress) or the loader stops (no progress)."""
        attempt = job_failures = runs = 0
        durable: set[str] = set()  # exactly-once: ids an earlier attempt made durable
        while True:
            started, runs = time.monotonic(), runs + 1
            try:
                reports = self._run(frame, runs - 1, frozenset(durable))
            except (Py4JJavaError, CapturedException) as failure:
                job_failures += 1
                if job_failures > MAX_JOB_FAILURES:
                    raise
                self.job_failures += 1
                reports = [PartitionReport(transient_error=_job_failure(failure), executor="")]
            for report in reports:
                durable.update(report.durable_ids)
            self._settle_split(reports)
            errors = self._record(reports, time.monotonic() - started)
            self._hold(reports)
            if not errors:
                self._readiness.recovered()
                self._settled(progress=True)
                if self._metrics is not None:
                    self._metrics.committed()
                return
            attempt += 1
            delay = self._settings.retry_delay(attempt, errors[0])
            outages = [o for report in reports for o in report.registry_outages]
            self._readiness.degraded(errors[0], outages)
            _log.warning(
                "batch held back by a failing dependency",
                batch_id=batch_id,
                attempt=attempt,
                retry_in_s=delay,
                error=errors[0],
            )
            if self._stopping.wait(delay):
                self._settled(progress=False)
                return

    def _settle_split(self, reports: list[PartitionReport]) -> None:
        """Settle the compressed deliveries whose records several tasks wrote (exactly-once)."""
        accounts = [account for report in reports for account in report.record_accounts]
        if not accounts:
            return
        config = self._partition.config
        settled = settle_split(accounts, config.pubsub_emulator_host, config.schema_hold.retry_s)
        self.split_deliveries.update(asdict(settled))
        if settled.unsettled and self._metrics is not None:
            self._metrics.unsettled_acks.inc(settled.unsettled)

    def _hold(self, reports: list[PartitionReport]) -> None:
        """Hand the parked deliveries to the holding; show what waits for which schema."""
        held_schemas = frozenset().union(*(r.outcome.held_schemas for r in reports))
        held = sum(len(r.outcome.held_ids) for r in reports)
        if self._holding is not None:
            for report in reports:
                self._holding.take(report.parked, report.outcome.held_schemas)
            kept_schemas, kept = self._holding.held
            held_schemas, held = held_schemas | kept_schemas, max(held, kept)
        self._readiness.holding(held_schemas, held)
        if self._metrics is not None:
            self._metrics.holding(held_schemas, held)

    def _settled(self, progress: bool) -> None:
        watch = self._watch
        if watch is not None:
            (watch.progressed if progress else watch.gave_back)()

    def _run(
        self, frame: DataFrame, attempt: int, durable: frozenset[str]
    ) -> list[PartitionReport]:
        """Run the batch's one action, attempt ``attempt`` (0, 1, …); return the reports.

        Notes:
            Exactly-once: a retried action runs the first attempt's rows again (Spark
            reuses the shuffle), so it skips the ids an earlier attempt made durable
            (``durable``): their bad rows are not published again, nor their events
            counted again (issue 37, finding 6).
        """
        frame.sparkSession.sparkContext.setLocalProperty(ATTEMPT_PROPERTY, str(attempt))
        if self._keyed:
            partition = replace(self._partition, skip=durable) if durable else self._partition
            return list(frame.rdd.mapPartitions(partition.from_rows).collect())
        return [report_of(row) for row in frame.collect()]

    def stop(self, timeout_s: float) -> bool:
        """Skip further batches and wait for the one in flight; say whether it finished."""
        self._stopping.set()
        finished = self._busy.acquire(timeout=timeout_s)
        if finished:
            self._busy.release()
        return finished

    def record_held(self, outcome: BatchOutcome) -> None:
        """Count what the holding wrote of parked deliveries (its observer)."""
        self.totals = self.totals.merge(outcome.without_latencies())
        if self._observer is not None:
            self._observer(outcome)
        if self._metrics is not None:
            self._metrics.record(outcome, 0)
        if outcome.events_in:
            _log.info("parked events loaded", events=outcome.events_in, good=outcome.good)
            self._hold([])  # what still waits, for /readyz and /metrics

    def _record(self, reports: list[PartitionReport], duration_s: float) -> list[str]:
        outcome = BatchOutcome()
        executors: Counter[str] = Counter()
        for report in reports:
            outcome = outcome.merge(report.outcome)
            if report.executor:  # not the stand-in report of a failed job
                executors[report.executor] += report.outcome.events_in
        self.events_by_executor.update(executors)
        errors = [r.transient_error for r in reports if r.transient_error is not None]
        self.totals = self.totals.merge(outcome.without_latencies())
        if self._observer is not None:
            self._observer(outcome)
        self.transient_failures += len(errors)
        unsettled = sum(report.unsettled_acks for report in reports)
        if unsettled:
            _log.warning("acks failed after the writes were durable", ack_ids=unsettled)
        if self._metrics is not None:
            self._metrics.record(outcome, len(errors))
            self._metrics.unsettled_acks.inc(unsettled)
            self._metrics.record_executors(executors)
            self._metrics.batch_duration.observe(duration_s)
        if outcome.events_in:
            _log.info(
                "batch loaded",
                events=outcome.events_in,
                good=outcome.good,
                bad=outcome.bad,
                failed=outcome.failed,
                types=outcome.types_published,
                bad_by_code=dict(outcome.bad_by_code),
                failed_by_reason=dict(outcome.failed_by_reason),
                events_by_executor=dict(executors),
                seconds=round(duration_s, 3),
            )
        return errors


class StreamingLoader:
    """Start the Pub/Sub → BigQuery query in a session, and stop it gracefully."""

    def __init__(
        self,
        spark: SparkSession,
        config: WorkerConfig,
        settings: StreamSettings,
        readiness: Readiness | None = None,
        metrics: LoaderMetrics | None = None,
        observer: Callable[[BatchOutcome], None] | None = None,
        watch: ProgressWatch | None = None,
    ) -> None:
        self._spark = spark
        self._config = config
        self._settings = settings
        self.readiness = readiness or Readiness()
        self._partition = StreamingPartition(
            config, task_processor, settings.ack_deadline_s, settings.lease_interval_s
        )
        self.holding = holding_for(config, settings)
        self.writer = BatchWriter(
            self._partition, settings, self.readiness, metrics, observer, watch, self.holding
        )
        self.holding.observe(self.writer.record_held)
        self._query: StreamingQuery | None = None

    @property
    def query(self) -> StreamingQuery:
        """The running query (after ``start``)."""
        if self._query is None:
            raise RuntimeError("the streaming loader is not started")
        return self._query

    def start(self) -> StreamingQuery:
        """Start the query over the config's input subscription."""
        s, unpack = self._settings, self._config.decompression
        if self._config.exactly_once:
            source = RECORDS_FORMAT
            register_record_source(self._spark)
        else:
            source = PROCESSING_FORMAT
            register_processing_source(self._spark, source, self._partition)
        reader = (
            self._spark.readStream.format(source)
            .option("subscription", self._config.input_subscription)
            .option("numPartitions", str(s.partitions))
            .option("maxMessagesPerPartition", str(s.max_messages))
            .option("maxBytesPerPartition", str(s.max_bytes))
            .option("pullTimeoutSeconds", str(s.pull_timeout_s))
            .option("ackDeadlineSeconds", str(s.ack_deadline_s))
            .option("taskSeconds", str(long_lived_task_s(s.task_seconds, self._config)))
            .option("maxBytesSinglePayload", str(unpack.max_bytes_single_payload))
            .option("maxBytesInBatch", str(unpack.max_bytes_in_batch))  # pubsub-records only
        )
        if self._config.pubsub_emulator_host:
            reader = reader.option("emulatorHost", self._config.pubsub_emulator_host)
        writer = (
            reader.load()
            .writeStream.foreachBatch(self.writer)
            .option("checkpointLocation", s.checkpoint)
            .queryName("plowline-loader")
        )
        if s.trigger_interval_s > 0:
            writer = writer.trigger(processingTime=f"{s.trigger_interval_s} seconds")
        self._query = writer.start()
        self.readiness.started()
        _log.info(
            "loader started",
            subscription=self._config.input_subscription,
            table=self._config.bigquery.table_ref,
            checkpoint=s.checkpoint,
        )
        return self._query

    def stop(self, grace_s: float) -> bool:
        """Finish the batch in flight (at most ``grace_s``), then stop; say whether it was clean."""
        self.readiness.stopped()
        clean = self.writer.stop(grace_s)
        if self._query is not None:
            self._query.stop()
        try:
            self.holding.retry_due(everything=True)  # a last chance before handing back
        finally:
            self.holding.release()
        _log.info(
            "loader stopped",
            clean=clean,
            events_by_executor=dict(self.writer.events_by_executor),
            **_counts(self.writer.totals),
        )
        return clean


def holding_for(config: WorkerConfig, settings: StreamSettings) -> Holding:
    """Return the driver's holding of parked deliveries, over the config's Pub/Sub and sink."""
    subscriptions: dict[str, Subscription] = {}

    def subscription(path: str) -> Subscription:
        from plowline_cloud.pubsub.subscription import Subscription

        if path not in subscriptions:
            subscriptions[path] = Subscription(path, config.pubsub_emulator_host)
        return subscriptions[path]

    return Holding(
        subscription,
        lambda: processor_for(config),
        ack_deadline_s=settings.ack_deadline_s,
        lease_interval_s=settings.lease_interval_s,
        retry_s=float(config.schema_hold.retry_s),
        decompression=config.decompression,
    )


def _job_failure(failure: Exception) -> str:
    """Return the first line of Spark's reason for a failed job (``Job aborted due to …``)."""
    text = str(failure)
    reason = next((line for line in text.splitlines() if "Job aborted" in line), None)
    first = reason or next((line for line in text.splitlines() if line.strip()), "")
    return f"Spark job failed: {first.strip()[:300]}"


def _counts(outcome: BatchOutcome) -> dict[str, int]:
    return {
        "events": outcome.events_in,
        "good": outcome.good,
        "bad": outcome.bad,
        "failed": outcome.failed,
        "types": outcome.types_published,
    }
