"""Liveness: a service that holds work and settles none of it for too long is not alive.

``/healthz`` used to answer "ok" whatever happened; a consumer wedged on a lock, a stream
that hangs, or a batch that never ends kept its pod for ever. A ``ProgressWatch`` counts
what the service holds (Pub/Sub messages received and not yet settled, a micro-batch in
flight) and when it last made progress (a message acked, a batch committed). The service
is alive while it holds nothing, or while its last progress is more recent than the
stall timeout. Readiness is a separate question (``/readyz``) and is not changed here.

A consumer whose stream has ended is not alive either, whatever it holds: a streaming
pull that ended for good (subscription deleted, PermissionDenied, a credential refresh
error) or a streaming query that stopped consumes nothing any more, and a process that
keeps answering 200 is never restarted. One rule, :func:`keep_consuming`, used by every
long-running command (loader ``run``, mutator ``listen`` and ``serve``, repeater ``run``,
dead-letter ``run``): once the stream has ended, the watch records why (``/healthz``
answers 503 from then on, the cause in its body) and the command exits with
:data:`EXIT_STREAM_ENDED` (1), so that any supervisor, probe or none, restarts it.

Notes:
    The stall clock starts when work arrives at an idle service, and restarts at each
    progress. Work given back undone (a nack after a failed write) is not progress: if
    the same work comes back within the stall timeout the clock keeps running, so a
    service that nacks and receives the same messages in a loop is found out. Work that
    arrives long after the last give-back starts a fresh clock.
    Thread-safe (one lock): Pub/Sub callback threads, the service loop and the health
    server's threads all call in. Time is a passed-in monotonic function (a fake in tests).
    A stall makes ``/healthz`` answer 503 in every service; only the loader also exits
    on one (``keep_consuming(..., end_on_stall=True)``), since a hung micro-batch may
    hold its leases for ever and a plain ``run`` has no probe to restart it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import structlog

from plowline_cloud.chassis import EXIT_OK, EXIT_UNAVAILABLE
from plowline_cloud.metrics import HealthServer, MetricsRegistry, start_health_server

_log = structlog.get_logger("plowline.liveness")

EXIT_STOPPED, EXIT_STREAM_ENDED = EXIT_OK, EXIT_UNAVAILABLE
"""What a consumer exits with: stopped on request (SIGTERM), or no longer alive."""

STALL_TIMEOUT_HELP = (
    "seconds the service may hold work (messages received, a batch in flight) without "
    "settling any before /healthz answers 503 and Kubernetes restarts it; an idle service "
    "stays live"
)


class ProgressWatch:
    """Count the work a service holds and say whether it still makes progress."""

    def __init__(self, stall_timeout_s: float, monotonic: Callable[[], float]) -> None:
        if stall_timeout_s <= 0:
            raise ValueError(f"stall timeout must be positive, got {stall_timeout_s}")
        self.stall_timeout_s = stall_timeout_s
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._held = 0
        self._since: float | None = None
        self._given_back_at: float | None = None
        self._progressed = 0
        self._ended: str | None = None

    def took(self, count: int = 1) -> None:
        """Record ``count`` units of work received (held until settled)."""
        now = self._monotonic()
        with self._lock:
            if self._held == 0 and not self._continues(now):
                self._since = now
            self._held += count

    def progressed(self, count: int = 1) -> None:
        """Record ``count`` units settled for good (acked, committed): the clock restarts."""
        now = self._monotonic()
        with self._lock:
            self._held = max(0, self._held - count)
            self._progressed += count
            self._since = now if self._held else None
            self._given_back_at = None

    def gave_back(self, count: int = 1) -> None:
        """Record ``count`` units released undone (nacked): not progress."""
        now = self._monotonic()
        with self._lock:
            self._held = max(0, self._held - count)
            self._given_back_at = now

    @property
    def held(self) -> int:
        """Return how many units of work the service holds now."""
        with self._lock:
            return self._held

    def stalled_s(self) -> float:
        """Return the seconds the held work has waited for progress (0 when nothing is held)."""
        now = self._monotonic()
        with self._lock:
            if self._held == 0 or self._since is None:
                return 0.0
            return max(0.0, now - self._since)

    def end(self, cause: str) -> None:
        """Record that the service's stream has ended for good: not alive from now on."""
        with self._lock:
            if self._ended is None:
                self._ended = cause

    @property
    def ended(self) -> str | None:
        """Return why the stream ended (``end``), or None while it runs."""
        with self._lock:
            return self._ended

    def alive(self) -> bool:
        """Say whether the service is live: its stream runs, and it is idle or progressing."""
        return self.ended is None and self.stalled_s() <= self.stall_timeout_s

    def details(self) -> dict[str, Any]:
        """Return what ``/healthz`` shows: held work, seconds without progress, the limit.

        Notes:
            ``streamEnded`` (the cause) is there only once the stream has ended.
        """
        stalled = self.stalled_s()
        ended = self.ended
        details: dict[str, Any] = {
            "alive": ended is None and stalled <= self.stall_timeout_s,
            "held": self.held,
            "secondsWithoutProgress": round(stalled, 3),
            "stallTimeoutSeconds": self.stall_timeout_s,
        }
        if ended is not None:
            details["streamEnded"] = ended
        return details

    def _continues(self, now: float) -> bool:
        """Say whether work arriving now continues an earlier stall (given back recently)."""
        given_back = self._given_back_at
        return (
            self._since is not None
            and given_back is not None
            and now - given_back <= self.stall_timeout_s
        )


class Stream(Protocol):
    """What :func:`keep_consuming` asks of a consumer's stream (a streaming pull, a query)."""

    def ended(self) -> str | None:
        """Return why the stream has ended for good, or None while it runs."""
        ...


@dataclass(frozen=True, slots=True)
class Ending:
    """Why a consumer stopped: the exit code and, unless stopped on request, the cause."""

    code: int
    cause: str | None = None
    stalled: bool = False


def keep_consuming(
    stream: Stream,
    watch: ProgressWatch,
    stop: threading.Event,
    tick: Callable[[], object],
    *,
    name: str,
    end_on_stall: bool = False,
) -> Ending:
    """Call ``tick`` until ``stop`` is set (exit 0) or the stream has ended (exit 1).

    The one liveness rule of every long-running command: the stream's end is recorded on
    ``watch`` (``/healthz`` answers 503 with the cause) and logged, and the command exits
    with :data:`EXIT_STREAM_ENDED`. ``tick`` is the service's own work and its wait (it
    must return within a few seconds); ``name`` (the service) opens the log lines. With
    ``end_on_stall``, held work stalled past the watch's timeout ends the command the
    same way.
    """
    while not stop.is_set():
        cause = stream.ended()
        if cause is not None:
            watch.end(cause)
            _log.error(f"{name} stream ended: exiting so that it is restarted", cause=cause)
            return Ending(EXIT_STREAM_ENDED, cause)
        if end_on_stall and not watch.alive():
            return _stalled(watch, name)
        tick()
    return Ending(EXIT_STOPPED)


def _stalled(watch: ProgressWatch, name: str) -> Ending:
    details = watch.details()
    cause = (
        f"stalled: held {details['held']} unit(s) of work for "
        f"{details['secondsWithoutProgress']:.0f} s without settling any "
        f"(stall timeout {watch.stall_timeout_s:g} s)"
    )
    _log.error(f"{name} stalled: exiting so that it is restarted", cause=cause)
    return Ending(EXIT_STREAM_ENDED, cause, stalled=True)


def register_watch_metrics(
    registry: MetricsRegistry,
    prefix: str,
    watch: ProgressWatch,
    ready: Callable[[], bool] | None = None,
) -> None:
    """Export ``<prefix>_work_held``, ``<prefix>_stalled_seconds`` and ``<prefix>_ready``.

    Notes:
        Gauges read at scrape time, so they are never stale. ``ready`` is the same check
        ``/readyz`` answers (a failing check reads as 0); without it no ``_ready`` gauge
        is made (the loader keeps its own).
    """
    registry.gauge(f"{prefix}_work_held", "Units of work held, not yet settled").set_function(
        lambda: float(watch.held)
    )
    registry.gauge(
        f"{prefix}_stalled_seconds", "Seconds the held work has waited for progress"
    ).set_function(watch.stalled_s)
    if ready is not None:
        check = ready
        registry.gauge(f"{prefix}_ready", "1 when /readyz answers 200").set_function(
            lambda: 1.0 if _safe(check) else 0.0
        )


def serve_probes(
    port: int,
    registry: MetricsRegistry,
    prefix: str,
    watch: ProgressWatch,
    ready: Callable[[], bool],
    host: str = "0.0.0.0",
) -> HealthServer:
    """Serve a consumer's ``/healthz`` (``watch``), ``/readyz`` (``ready``) and ``/metrics``.

    The health wiring of every long-running command without an HTTP API of its own:
    the watch's gauges (:func:`register_watch_metrics`) and the health server
    (``plowline_cloud.metrics.start_health_server``), ``/healthz`` answering 503 once
    the watch says not alive. ``port`` 0 picks a free one (``HealthServer.port``).
    """
    register_watch_metrics(registry, prefix, watch, ready)
    return start_health_server(port, registry, ready, host, liveness=watch.details)


def _safe(check: Callable[[], bool]) -> bool:
    try:
        return bool(check())
    except Exception:  # a failing readiness check reads as "not ready", never a failed scrape
        return False
