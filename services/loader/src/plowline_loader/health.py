"""The loader's readiness: started, and its last batch not held up by a failing dependency.

``/healthz`` says the driver process is alive; ``/readyz`` answers 200 only while the
query runs and no transient error (registry, BigQuery, Pub/Sub) holds the stream back.

Notes:
    Set from the driver's foreachBatch thread and read by the health server's threads:
    a lock-free ``threading.Event`` pair is enough.
"""

from __future__ import annotations

import threading

from plowline_cloud.metrics import HealthServer, MetricsRegistry, start_health_server
from prometheus_client import Gauge


class Readiness:
    """Whether the loader should receive traffic (``/readyz``)."""

    def __init__(self, gauge: Gauge | None = None) -> None:
        self._started = threading.Event()
        self._degraded = threading.Event()
        self._gauge = gauge
        self.last_error: str | None = None

    def started(self) -> None:
        """Mark the streaming query as running."""
        self._started.set()
        self._publish()

    def degraded(self, error: str) -> None:
        """Mark a dependency as failing; batches are being retried."""
        self.last_error = error
        self._degraded.set()
        self._publish()

    def recovered(self) -> None:
        """Mark the last batch as having gone through."""
        self._degraded.clear()
        self._publish()

    def stopped(self) -> None:
        """Mark the query as stopped (shutting down)."""
        self._started.clear()
        self._publish()

    def __call__(self) -> bool:
        """Say whether the loader is ready."""
        return self._started.is_set() and not self._degraded.is_set()

    def _publish(self) -> None:
        if self._gauge is not None:
            self._gauge.set(1 if self() else 0)


def serve_health(port: int, registry: MetricsRegistry, readiness: Readiness) -> HealthServer:
    """Serve /healthz, /readyz and /metrics for the driver on ``port`` (0: any free port)."""
    return start_health_server(port, registry, readiness)
