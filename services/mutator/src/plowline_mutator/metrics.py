"""The mutator's Prometheus metrics, on a registry of its own (never the global one)."""

from __future__ import annotations

from plowline_cloud.metrics import MetricsRegistry

from plowline_mutator.mutation import MutationResult, Rejection

#: Mutation latency buckets (seconds): the target is under one second.
_LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 30.0)
#: Where types come from: the types subscription, the HTTP API.
SOURCES = ("listener", "http")
#: Every ``kind`` of ``mutator_errors_total``.
ERROR_KINDS = (
    "malformed",
    "unknown_schema",
    "conflict",
    *(kind.value for kind in Rejection),
    "registry",
    "transient",
    "permanent",
)


class MutatorMetrics:
    """Counters and a histogram shared by the listener and the HTTP API.

    Notes:
        ``source`` is ``listener`` or ``http``; ``kind`` of an error is one of
        ``malformed``, ``unknown_schema``, ``conflict``, ``illegal_name``,
        ``column_limit``, ``refused`` (one count per type or conflicting field), and
        ``registry``, ``transient``, ``permanent`` (one count per message or request).
        Every series (per source, per source and kind) is exported from the start, at 0:
        a series that appeared only with its first count would hide that count from
        ``rate`` and ``increase`` (the dashboard's first mutations after a start).
    """

    def __init__(self, registry: MetricsRegistry | None = None) -> None:
        self.registry = registry or MetricsRegistry("mutator")
        self.types_received = self.registry.counter(
            "mutator_types_received_total", "Entity types received", ["source"]
        )
        self.columns_added = self.registry.counter(
            "mutator_columns_added_total", "Columns added or widened", ["source"]
        )
        self.errors = self.registry.counter(
            "mutator_errors_total",
            "Types or messages that could not be handled",
            ["source", "kind"],
        )
        self.latency = self.registry.histogram(
            "mutator_mutation_seconds",
            "Time to make the table hold the types of one request or message",
            ["source"],
            buckets=_LATENCY_BUCKETS,
        )
        for source in SOURCES:
            for metric in (self.types_received, self.columns_added, self.latency):
                metric.labels(source)
            for kind in ERROR_KINDS:
                self.errors.labels(source, kind)

    def record(self, source: str, result: MutationResult, types: int, seconds: float) -> None:
        """Count one handled request or message."""
        self.types_received.labels(source).inc(types)
        self.columns_added.labels(source).inc(len(result.added))
        if result.unknown:
            self.errors.labels(source, "unknown_schema").inc(len(result.unknown))
        if result.conflicts:
            self.errors.labels(source, "conflict").inc(len(result.conflicts))
        for rejected in result.rejected:
            self.errors.labels(source, rejected.kind.value).inc()
        self.latency.labels(source).observe(seconds)

    def failed(self, source: str, kind: str) -> None:
        """Count one failure of the given kind."""
        self.errors.labels(source, kind).inc()

    def render(self) -> bytes:
        """Return the metrics in the Prometheus text format."""
        return self.registry.render()
