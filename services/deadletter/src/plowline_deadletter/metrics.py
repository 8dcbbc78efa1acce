"""The dead-letter writer's Prometheus metrics."""

from __future__ import annotations

from dataclasses import dataclass

from plowline_cloud.metrics import MetricsRegistry
from prometheus_client import Counter, Gauge


@dataclass(frozen=True, slots=True)
class DeadLetterMetrics:
    """Counters of what the writer filed (``plowline_deadletter_*``)."""

    objects_written: Counter
    rows_written: Counter
    unparseable: Counter
    write_failures: Counter
    duplicates: Counter
    buffered: Gauge
    lookback_rows: Gauge
    lookback_incomplete: Gauge

    @classmethod
    def create(cls, registry: MetricsRegistry) -> DeadLetterMetrics:
        """Register the metrics in a service registry."""
        return cls(
            objects_written=registry.counter(
                "deadletter_objects_written", "Objects written to the bucket", ["partition"]
            ),
            rows_written=registry.counter(
                "deadletter_rows_written", "Bad rows written to the bucket", ["partition"]
            ),
            unparseable=registry.counter(
                "deadletter_unparseable", "Messages that were not self-describing JSON"
            ),
            write_failures=registry.counter(
                "deadletter_write_failures", "Objects that could not be written (rows redelivered)"
            ),
            duplicates=registry.counter(
                "deadletter_duplicates",
                "Deliveries of a bad row already buffered or written (same bytes): not written again",
            ),
            buffered=registry.gauge("deadletter_buffered", "Bad rows waiting for their object"),
            lookback_rows=registry.gauge(
                "deadletter_lookback_rows",
                "Bad rows read at start from the objects written within --dedupLookback",
            ),
            lookback_incomplete=registry.gauge(
                "deadletter_lookback_incomplete",
                "1 when reading the recent objects at start failed: copies of bad rows written "
                "before the start may be written again",
            ),
        )
