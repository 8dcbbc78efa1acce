"""The loader's readiness: started, and its last batch not held up by a failing dependency.

``/healthz`` says the driver is alive: 503 once a micro-batch has been in flight longer
than ``--stall-timeout`` without going through (``plowline_cloud.liveness``); ``/readyz`` answers 200 only while the
query runs and no transient error (registry, BigQuery, Pub/Sub) holds the stream back.
Its JSON body says what the loader waits on::

    {"ready": false, "lastError": "RegistryUnavailable: cannot resolve iglu:…",
     "registries": [{"repository": "Iglu Central", "since": "…Z", "lastFailure": "…Z",
                     "lastError": "…ReadTimeout…", "failures": 12}],
     "missingSchemas": ["iglu:com.acme/checkout/jsonschema/1-0-0"], "heldEvents": 3}

``missingSchemas`` are the schemas no registry has that the last batch held events for
(``schema_hold``: exitOnMissingIgluSchema), shown only while there are some; they do not
make the loader unready.

Notes:
    Set from the driver's foreachBatch thread and read by the health server's threads:
    a lock-free ``threading.Event`` pair is enough for the flags, and the registry view is
    replaced whole (one reference assignment). The registries are those whose outage held
    back the latest attempt, as the executors' resolvers saw them; an outage's ``since``
    is the earliest any attempt reported. Each registry's outage is logged when it first
    holds a batch back and when it no longer does: two lines, whatever the number of events.
    ``observe`` adds a callback told each ``degraded`` error and each recovery (the
    webhook's setup alerts, ``plowline_loader.run_command``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

import structlog
from plowline_cloud.liveness import ProgressWatch
from plowline_cloud.metrics import HealthServer, MetricsRegistry, start_health_server
from plowline_core.iglu.outage import RegistryOutage
from prometheus_client import Gauge

_log = structlog.get_logger("plowline.loader")


class Readiness:
    """Whether the loader should receive traffic (``/readyz``), and what it waits on."""

    def __init__(self, gauge: Gauge | None = None) -> None:
        self._started = threading.Event()
        self._degraded = threading.Event()
        self._gauge = gauge
        self.last_error: str | None = None
        self.registry_outages: Mapping[str, RegistryOutage] = {}
        self.missing_schemas: frozenset[str] = frozenset()
        self.held_events = 0
        self._observers: list[Callable[[str | None], None]] = []

    def observe(self, observer: Callable[[str | None], None]) -> None:
        """Call ``observer(error)`` on each ``degraded``, ``observer(None)`` on each ``recovered``.

        An observer must return at once (it runs on the batch's thread); one that raises is
        logged, never passed on.
        """
        self._observers.append(observer)

    def started(self) -> None:
        """Mark the streaming query as running."""
        self._started.set()
        self._publish()

    def degraded(self, error: str, registry_outages: Iterable[RegistryOutage] = ()) -> None:
        """Mark a dependency as failing (and the Iglu registries that did); batches are retried."""
        self.last_error = error
        self._hold(_merged(registry_outages))
        self._degraded.set()
        self._publish()
        self._tell(error)

    def recovered(self) -> None:
        """Mark the last batch as having gone through."""
        self._hold({})
        self._degraded.clear()
        self._publish()
        self._tell(None)

    def holding(self, schemas: frozenset[str], events: int) -> None:
        """Record the events the last batch held for missing schemas (a known state: still ready).

        Notes:
            Logged when the set of schemas changes: once when a schema starts holding
            events, once when it no longer does.
        """
        for schema in sorted(schemas - self.missing_schemas):
            _log.warning(
                "iglu schema missing: its events are held, the rest loads",
                schema=schema,
                held_events=events,
                until="the schema is published, or --missing-schema-bound passes",
            )
        for schema in sorted(self.missing_schemas - schemas):
            _log.info("iglu schema no longer holds events", schema=schema)
        self.missing_schemas, self.held_events = schemas, events

    def stopped(self) -> None:
        """Mark the query as stopped (shutting down)."""
        self._started.clear()
        self._publish()

    def __call__(self) -> bool:
        """Say whether the loader is ready."""
        return self._started.is_set() and not self._degraded.is_set()

    def details(self) -> dict[str, Any]:
        """Return what ``/readyz`` shows besides ``ready``: the last error and failing registries."""
        degraded = self._degraded.is_set()
        details: dict[str, Any] = {
            "started": self._started.is_set(),
            "lastError": self.last_error if degraded else None,
            "registries": [outage.to_json() for outage in self.registry_outages.values()],
        }
        if self.missing_schemas:
            details["missingSchemas"] = sorted(self.missing_schemas)
            details["heldEvents"] = self.held_events
        return details

    def _hold(self, outages: dict[str, RegistryOutage]) -> None:
        known = self.registry_outages
        for name, outage in outages.items():
            before = known.get(name)
            if before is None:
                _log.warning(
                    "iglu registry unavailable: batches held back",
                    registry=name,
                    since=outage.since.isoformat(),
                    error=outage.last_error,
                )
            elif before.since < outage.since:
                outages[name] = replace(outage, since=before.since)
        for name, outage in known.items():
            if name not in outages:
                _log.info(
                    "iglu registry no longer holds batches back",
                    registry=name,
                    since=outage.since.isoformat(),
                    last_error=outage.last_error,
                )
        self.registry_outages = outages

    def _tell(self, error: str | None) -> None:
        for observer in self._observers:
            try:
                observer(error)
            except Exception as failure:  # monitoring must never fail a batch
                _log.warning("readiness observer failed", error=f"{failure!r}")

    def _publish(self) -> None:
        if self._gauge is not None:
            self._gauge.set(1 if self() else 0)


def _merged(outages: Iterable[RegistryOutage]) -> dict[str, RegistryOutage]:
    """Combine the outages the partitions of one attempt reported, one per registry."""
    merged: dict[str, RegistryOutage] = {}
    for outage in outages:
        before = merged.get(outage.repository)
        merged[outage.repository] = outage if before is None else before.merge(outage)
    return merged


def serve_health(
    port: int, registry: MetricsRegistry, readiness: Readiness, watch: ProgressWatch | None = None
) -> HealthServer:
    """Serve /healthz (503 once a batch stalls), /readyz (JSON details), /metrics on ``port``."""
    liveness = watch.details if watch is not None else None
    return start_health_server(
        port, registry, readiness, details=readiness.details, liveness=liveness
    )
