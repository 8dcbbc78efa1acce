"""Prometheus metrics per service and the health server (``/healthz``, ``/readyz``, ``/metrics``).

Notes:
    Each service owns a ``CollectorRegistry`` (never the global one), so tests and
    several services in one process do not collide. The health server is a small
    threaded stdlib HTTP server; FastAPI services can serve ``render`` and ``ready``
    from their own routes instead.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar

import orjson
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import generate_latest

_M = TypeVar("_M", Counter, Gauge, Histogram)


class MetricsRegistry:
    """A service's metrics: counters, gauges and histograms named ``<namespace>_<name>``."""

    def __init__(self, service: str, namespace: str = "plowline") -> None:
        self.service = service
        self.namespace = namespace
        self.registry = CollectorRegistry(auto_describe=True)
        self._metrics: dict[str, Any] = {}
        self._lock = threading.Lock()

    def counter(self, name: str, documentation: str, labels: Sequence[str] = ()) -> Counter:
        """Return the counter of that name, creating it on first use."""
        return self._get(Counter, name, documentation, labels)

    def gauge(self, name: str, documentation: str, labels: Sequence[str] = ()) -> Gauge:
        """Return the gauge of that name, creating it on first use."""
        return self._get(Gauge, name, documentation, labels)

    def histogram(
        self,
        name: str,
        documentation: str,
        labels: Sequence[str] = (),
        buckets: Sequence[float] = Histogram.DEFAULT_BUCKETS,
    ) -> Histogram:
        """Return the histogram of that name, creating it on first use."""
        return self._get(Histogram, name, documentation, labels, buckets=tuple(buckets))

    def render(self) -> bytes:
        """Return every metric in the Prometheus text format."""
        return generate_latest(self.registry)

    def _get(
        self, kind: type[_M], name: str, documentation: str, labels: Sequence[str], **extra: Any
    ) -> _M:
        with self._lock:
            metric = self._metrics.get(name)
            if metric is None:
                metric = kind(
                    name,
                    documentation,
                    labelnames=tuple(labels),
                    namespace=self.namespace,
                    registry=self.registry,
                    **extra,
                )
                self._metrics[name] = metric
        if not isinstance(metric, kind):
            raise TypeError(f"metric {name} is a {type(metric).__name__}, not a {kind.__name__}")
        return metric


class HealthServer:
    """A running health server; ``port`` is the bound port (useful when asked for 0)."""

    def __init__(self, server: ThreadingHTTPServer, thread: threading.Thread) -> None:
        self._server = server
        self._thread = thread

    @property
    def port(self) -> int:
        """The TCP port the server listens on."""
        return int(self._server.server_address[1])

    def stop(self, timeout: float = 5.0) -> None:
        """Stop serving and release the port."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout)


def start_health_server(
    port: int,
    registry: CollectorRegistry | MetricsRegistry,
    ready: Callable[[], bool],
    host: str = "0.0.0.0",
    details: Callable[[], Mapping[str, Any]] | None = None,
    liveness: Callable[[], Mapping[str, Any]] | None = None,
) -> HealthServer:
    """Serve ``/healthz`` (alive), ``/readyz`` (200 if ``ready()`` else 503) and ``/metrics``.

    With ``details``, ``/readyz`` answers JSON: ``{"ready": …, **details()}`` (what the
    service waits on); without, ``ready`` or ``not ready`` as text. With ``liveness``
    (``ProgressWatch.details``), ``/healthz`` answers its JSON, 503 when ``alive`` is false;
    without, a constant ``ok``.
    """
    collectors = registry.registry if isinstance(registry, MetricsRegistry) else registry
    handler = _handler_class(collectors, ready, details, liveness)
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    thread = threading.Thread(
        target=server.serve_forever, args=(0.05,), name=f"health-{port}", daemon=True
    )
    thread.start()
    return HealthServer(server, thread)


def _is_ready(ready: Callable[[], bool]) -> bool:
    try:
        return bool(ready())
    except Exception:  # a failing readiness check means "not ready", never a crashed server
        return False


def _readyz(
    ready: Callable[[], bool], details: Callable[[], Mapping[str, Any]] | None
) -> tuple[int, bytes, str]:
    up = _is_ready(ready)
    status = 200 if up else 503
    if details is None:
        return status, b"ready\n" if up else b"not ready\n", "text/plain"
    try:
        body = orjson.dumps({"ready": up, **details()})
    except Exception as error:  # the details must never cost the probe its answer
        body = orjson.dumps({"ready": up, "detailsError": f"{type(error).__name__}: {error}"})
    return status, body, "application/json"


def _healthz(liveness: Callable[[], Mapping[str, Any]] | None) -> tuple[int, bytes, str]:
    if liveness is None:
        return 200, b"ok\n", "text/plain"
    state = liveness()
    return (200 if state.get("alive") else 503), orjson.dumps(state), "application/json"


def _handler_class(
    collectors: CollectorRegistry,
    ready: Callable[[], bool],
    details: Callable[[], Mapping[str, Any]] | None,
    liveness: Callable[[], Mapping[str, Any]] | None,
) -> type[BaseHTTPRequestHandler]:
    class _Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/healthz":
                self._answer(*_healthz(liveness))
            elif path == "/readyz":
                self._answer(*_readyz(ready, details))
            elif path == "/metrics":
                self._answer(200, generate_latest(collectors), CONTENT_TYPE_LATEST)
            else:
                self._answer(404, b"not found\n")

        def _answer(self, status: int, body: bytes, content_type: str = "text/plain") -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            """Stay quiet: probes every few seconds would drown the service's own logs."""

    return _Handler
