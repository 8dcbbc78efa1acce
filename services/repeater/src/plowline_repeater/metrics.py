"""The repeater's Prometheus metrics."""

from __future__ import annotations

from dataclasses import dataclass

from plowline_cloud.metrics import BatchHistogram, MetricsRegistry
from plowline_core.event.latency import LATENCY_BUCKETS_S
from prometheus_client import Counter, Gauge


@dataclass(frozen=True, slots=True)
class RepeaterMetrics:
    """What the repeater did with failed inserts (``plowline_repeater_*``)."""

    reinserted: Counter
    waiting: Gauge
    dead_ended: Counter
    objects_written: Counter
    failures: Counter
    collector_latency: BatchHistogram
    wait: BatchHistogram

    @classmethod
    def create(cls, registry: MetricsRegistry) -> RepeaterMetrics:
        """Register the metrics in a service registry."""
        return cls(
            reinserted=registry.counter("repeater_reinserted", "Failed inserts now in the table"),
            waiting=registry.gauge("repeater_waiting", "Failed inserts leased, waiting to fit"),
            dead_ended=registry.counter(
                "repeater_dead_ended", "Rows written to the dead-end bucket", ["code"]
            ),
            objects_written=registry.counter(
                "repeater_objects_written", "Objects written to the dead-end bucket"
            ),
            failures=registry.counter(
                "repeater_dependency_failures", "Inserts or writes that failed (retried)", ["what"]
            ),
            collector_latency=registry.batch_histogram(
                "repeater_collector_to_insert_seconds",
                "collector_tstamp to re-insert, for the rows the repeater put in the table",
                buckets=LATENCY_BUCKETS_S,
            ),
            wait=registry.batch_histogram(
                "repeater_publish_to_insert_seconds",
                "Failed insert published (by the loader) to re-insert: the repeater's detour",
                buckets=LATENCY_BUCKETS_S,
            ),
        )
