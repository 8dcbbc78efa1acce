"""The loader's Prometheus metrics, fed on the driver from the partitions' reports.

Executors are separate Python processes, so they do not touch these metrics: each task
returns a ``PartitionReport`` (counts and latency samples) through the micro-batch's
``collect``, and the driver records the batch's merged outcome here.

Notes:
    Names (namespace ``plowline``): ``loader_events_in_total``, ``loader_good_total``,
    ``loader_bad_total{code}``, ``loader_failed_inserts_total{reason}``,
    ``loader_types_published_total``, ``loader_executor_events_total{executor}`` (events
    taken in by the tasks each Spark executor ran; ``driver`` in local mode), ``loader_transient_failures_total``,
    ``loader_unsettled_acks_total`` (ack ids whose ack or nack kept failing after the writes),
    ``loader_batch_duration_seconds``, ``loader_collector_to_insert_seconds``,
    ``loader_publish_to_insert_seconds``, ``loader_ready``, ``loader_batches_committed_total``,
    ``loader_last_commit_timestamp_seconds`` (checkpoint progress),
    ``loader_held_events`` and ``loader_missing_schema{schema}`` (the last batch's events
    held for schemas no registry has: exitOnMissingIgluSchema, ``schema_hold``); ``run``
    adds the liveness gauges ``loader_work_held`` and ``loader_stalled_seconds``.
    ``loader_missing_schema`` names at most ``MISSING_SCHEMA_LABELS`` schemas (a bounded
    label: the rest count in ``schema="other"``; ``/readyz`` lists them all), each at 1
    while it holds events, and its series is removed once it no longer does.
    ``loader_failed_inserts_total`` has every ``reason`` of ``InsertReason`` from the start,
    at 0: a series that appeared only with its first failures would hide them from
    ``rate`` (the dashboard's "Failed inserts", the first batch after a start).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from plowline_cloud.metrics import BatchHistogram, MetricsRegistry
from plowline_core.event.latency import LATENCY_BUCKETS_S
from plowline_core.ports import InsertReason
from prometheus_client import Counter, Gauge, Histogram

from plowline_loader.batch.outcome import BatchOutcome

_DURATION_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0)
MISSING_SCHEMA_LABELS = 20
"""At most this many schemas get their own ``loader_missing_schema`` series."""
_OTHER = "other"


@dataclass(frozen=True)
class LoaderMetrics:
    """The loader's counters, histograms and readiness gauge."""

    registry: MetricsRegistry
    events_in: Counter
    good: Counter
    bad: Counter
    failed: Counter
    types_published: Counter
    executor_events: Counter
    transient_failures: Counter
    unsettled_acks: Counter
    batch_duration: Histogram
    collector_latency: BatchHistogram
    publish_latency: BatchHistogram
    ready: Gauge
    batches_committed: Counter
    last_commit: Gauge
    held_events: Gauge
    missing_schema: Gauge

    @classmethod
    def create(cls, registry: MetricsRegistry) -> LoaderMetrics:
        """Register the loader's metrics in ``registry``."""
        metrics = cls(
            registry=registry,
            events_in=registry.counter("loader_events_in", "Enriched events taken in"),
            good=registry.counter("loader_good", "Rows inserted into the table"),
            bad=registry.counter("loader_bad", "Bad rows published", ["code"]),
            failed=registry.counter("loader_failed_inserts", "Failed inserts", ["reason"]),
            types_published=registry.counter("loader_types_published", "Entity types published"),
            executor_events=registry.counter(
                "loader_executor_events", "Events taken in by each Spark executor", ["executor"]
            ),
            transient_failures=registry.counter(
                "loader_transient_failures", "Partitions handed back after a transient error"
            ),
            unsettled_acks=registry.counter(
                "loader_unsettled_acks",
                "Ack ids whose ack or nack kept failing once the writes were durable",
            ),
            batch_duration=registry.histogram(
                "loader_batch_duration_seconds", "Micro-batch wall time", buckets=_DURATION_BUCKETS
            ),
            collector_latency=registry.batch_histogram(
                "loader_collector_to_insert_seconds",
                "collector_tstamp to insert",
                buckets=LATENCY_BUCKETS_S,
            ),
            publish_latency=registry.batch_histogram(
                "loader_publish_to_insert_seconds",
                "Pub/Sub publish to insert",
                buckets=LATENCY_BUCKETS_S,
            ),
            ready=registry.gauge("loader_ready", "1 when the loader is ready"),
            batches_committed=registry.counter(
                "loader_batches_committed", "Micro-batches gone through (the checkpoint moves on)"
            ),
            last_commit=registry.gauge(
                "loader_last_commit_timestamp_seconds",
                "Unix time the last micro-batch went through",
            ),
            held_events=registry.gauge(
                "loader_held_events",
                "Events the last batch held unacked for a missing Iglu schema",
            ),
            missing_schema=registry.gauge(
                "loader_missing_schema",
                "1 for each missing Iglu schema events are held for (at most 20, then other)",
                ["schema"],
            ),
        )
        for reason in InsertReason:
            metrics.failed.labels(reason=reason.value)
        return metrics

    def committed(self) -> None:
        """Count one micro-batch gone through, now."""
        self.batches_committed.inc()
        self.last_commit.set_to_current_time()

    def holding(self, schemas: frozenset[str], events: int) -> None:
        """Show the events the last batch held and the missing schemas they wait for."""
        self.held_events.set(events)
        named = sorted(schemas)
        shown = set(named[:MISSING_SCHEMA_LABELS])
        if len(named) > MISSING_SCHEMA_LABELS:
            shown.add(_OTHER)
        exported = {
            sample.labels["schema"]
            for family in self.missing_schema.collect()
            for sample in family.samples
        }
        for schema in exported - shown:
            self.missing_schema.remove(schema)
        for schema in shown:
            self.missing_schema.labels(schema=schema).set(1)

    def record(self, outcome: BatchOutcome, transient_failures: int = 0) -> None:
        """Add one batch's merged outcome."""
        self.events_in.inc(outcome.events_in)
        self.good.inc(outcome.good)
        for code, count in outcome.bad_by_code.items():
            self.bad.labels(code=code).inc(count)
        for reason, count in outcome.failed_by_reason.items():
            self.failed.labels(reason=reason).inc(count)
        self.types_published.inc(outcome.types_published)
        self.transient_failures.inc(transient_failures)
        # Two latencies a row: counted a batch at a time (one ``observe`` each cost ~1 µs).
        self.collector_latency.observe_many(outcome.collector_latency_s)
        self.publish_latency.observe_many(outcome.publish_latency_s)

    def record_executors(self, events_by_executor: Mapping[str, int]) -> None:
        """Add one batch's events per executor (every executor that ran a task, even idle)."""
        for executor, events in events_by_executor.items():
            self.executor_events.labels(executor=executor).inc(events)
