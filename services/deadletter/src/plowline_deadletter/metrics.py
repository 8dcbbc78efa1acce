"""The dead-letter writer's Prometheus metrics.

Notes:
    The ``partition`` label takes a closed set of values (``partition_label``): the
    partitions of Snowplow's bad-row schemas, ``unparseable``, and ``other`` for anything
    else. A bad row may be published by anyone who can publish to the topic, and a label
    per schema key would grow a new series for every key they make up: the label set is bounded.
"""

from __future__ import annotations

from dataclasses import dataclass

from plowline_cloud.metrics import MetricsRegistry
from plowline_core.badrows import BADROWS_VENDOR
from prometheus_client import Counter, Gauge

from plowline_deadletter.layout import UNPARSEABLE

OTHER = "other"
"""The label of a partition that is not one of Snowplow's bad-row types."""

BAD_ROW_TYPES = (
    "adapter_failures",
    "collector_payload_format_violation",
    "enrichment_failures",
    "event_forwarding_error",
    "generic_error",
    "loader_iglu_error",
    "loader_parsing_error",
    "loader_recovery_error",
    "loader_runtime_error",
    "recovery_error",
    "relay_failure",
    "schema_violations",
    "size_violation",
    "snowflake_error",
    "tracker_protocol_violations",
)
"""Snowplow's bad-row schemas (Iglu Central, ``com.snowplowanalytics.snowplow.badrows``)."""

_LABELS = frozenset(
    {UNPARSEABLE}
    | {
        f"{BADROWS_VENDOR}.{name}/jsonschema-{model}"
        for name in BAD_ROW_TYPES
        for model in (1, 2, 3)
    }
)


def partition_label(partition: str) -> str:
    """Return the metric label of a partition: itself if a known bad-row type, else ``other``."""
    return partition if partition in _LABELS else OTHER


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
