"""Prometheus metrics per service and the health server (``/healthz``, ``/readyz``, ``/metrics``).

Notes:
    Each service owns a ``CollectorRegistry`` (never the global one), so tests and
    several services in one process do not collide. The health server is a small
    threaded stdlib HTTP server; FastAPI services can serve ``render`` and ``ready``
    from their own routes instead.
"""

from __future__ import annotations

import math
import threading
import time
from bisect import bisect_left
from collections import Counter as Tally
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import partial, reduce
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from itertools import accumulate
from operator import add
from typing import Any, TypeVar

import orjson
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import generate_latest
from prometheus_client.metrics_core import HistogramMetricFamily
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

_M = TypeVar("_M", Counter, Gauge, Histogram)
_le_label: Callable[[float], str] = floatToGoString  # a bucket's ``le``, as Histogram writes it


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

    def batch_histogram(
        self, name: str, documentation: str, buckets: Sequence[float]
    ) -> BatchHistogram:
        """Return a new label-less histogram fed a batch of observations at a time."""
        histogram = BatchHistogram(f"{self.namespace}_{name}", documentation, buckets)
        with self._lock:
            if name in self._metrics:
                raise ValueError(f"metric {name} is already registered")
            self.registry.register(histogram)
            self._metrics[name] = histogram
        return histogram

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


class BatchHistogram(Collector):
    """A histogram without labels that counts a batch of observations in one call.

    Notes:
        prometheus_client's ``Histogram.observe`` takes one value a call, with a lock
        and a walk of the buckets each (~1 µs); the loader's driver records two latencies
        for every row it loads. ``observe_many`` finds each value's bucket with one
        ``bisect`` and takes the lock once a batch. The exposition is ``Histogram``'s,
        sample for sample (``_bucket`` with ``le``, ``_count``, ``_sum``, ``_created``):
        a value goes to the first bucket whose bound is ≥ it; a NaN counts in no bucket
        and makes the sum NaN, as there.
    """

    def __init__(self, name: str, documentation: str, buckets: Sequence[float]) -> None:
        bounds = sorted({float(bound) for bound in buckets} - {math.inf})
        if not bounds or any(math.isnan(bound) for bound in bounds):
            raise ValueError(f"histogram {name} needs finite bucket bounds, got {buckets!r}")
        self._name = name
        self._documentation = documentation
        self._bounds = tuple(bounds)
        self._labels = tuple(_le_label(bound) for bound in (*bounds, math.inf))
        self._counts = [0] * (len(bounds) + 1)  # the last one is +Inf
        self._sum = 0.0
        self._created = time.time()
        self._lock = threading.Lock()
        self._bucket_of = partial(bisect_left, self._bounds)

    def observe_many(self, values: Sequence[float]) -> None:
        """Count every value of ``values``."""
        if math.isnan(sum(values)):  # a NaN (or +Inf and -Inf) among them: bucket the numbers only
            counts = Tally(self._bucket_of(v) for v in values if not math.isnan(v))
        else:
            counts = Tally(map(self._bucket_of, values))
        with self._lock:
            for index, count in counts.items():
                self._counts[index] += count
            # Added one by one onto the running sum, as Histogram does: floats do not
            # associate (1.8e308 + -1.8e308 + 1.0 is 1.0 that way, 0.0 summed per batch).
            self._sum = reduce(add, values, self._sum)

    def collect(self) -> Iterator[HistogramMetricFamily]:
        """Yield the histogram's samples (called by the registry on each scrape)."""
        with self._lock:
            counts, total = list(self._counts), self._sum
        family = HistogramMetricFamily(self._name, self._documentation, labels=())
        buckets = list(zip(self._labels, map(float, accumulate(counts)), strict=True))
        family.add_metric((), buckets, total)
        family.add_sample(f"{self._name}_created", {}, self._created)
        yield family


SOCKET_TIMEOUT_S = 10.0
"""Seconds a health-server connection may stay silent (a kubelet probe asks at once)."""


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
    *,
    socket_timeout: float = SOCKET_TIMEOUT_S,
) -> HealthServer:
    """Serve ``/healthz`` (alive), ``/readyz`` (200 if ``ready()`` else 503) and ``/metrics``.

    A connection that sends nothing for ``socket_timeout`` seconds is closed (one thread
    per connection: without it, a client that connects and stays silent, or a slow loris,
    held its thread for ever, and enough of them a thread limit the probes then hit).

    With ``details``, ``/readyz`` answers JSON: ``{"ready": …, **details()}`` (what the
    service waits on); without, ``ready`` or ``not ready`` as text. With ``liveness``
    (``ProgressWatch.details``), ``/healthz`` answers its JSON and a ``status`` (``ok``, or
    ``stalled`` with 503 when ``alive`` is false); without, a constant ``ok``. The answers
    are :func:`health_answer` and :func:`ready_answer`, which the mutator's API serves too.
    """
    collectors = registry.registry if isinstance(registry, MetricsRegistry) else registry
    handler = _handler_class(collectors, ready, details, liveness)
    handler.timeout = socket_timeout  # StreamRequestHandler: the connection's socket timeout
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


ProbeAnswer = tuple[int, bytes, str]
"""A probe's answer: HTTP status, body, content type (whatever server sends it)."""


def ready_answer(
    ready: Callable[[], bool], details: Callable[[], Mapping[str, Any]] | None = None
) -> ProbeAnswer:
    """Return ``/readyz``'s answer: 200 if ``ready()`` else 503 (see :func:`start_health_server`).

    A ``ready`` or ``details`` that raises reads as not ready, or as ``detailsError``.
    """
    up = _is_ready(ready)
    status = 200 if up else 503
    if details is None:
        return status, b"ready\n" if up else b"not ready\n", "text/plain"
    try:
        body = orjson.dumps({"ready": up, **details()})
    except Exception as error:  # the details must never cost the probe its answer
        body = orjson.dumps({"ready": up, "detailsError": f"{type(error).__name__}: {error}"})
    return status, body, "application/json"


def health_answer(liveness: Callable[[], Mapping[str, Any]] | None) -> ProbeAnswer:
    """Return ``/healthz``'s answer: ``ok``, or ``liveness()`` as JSON with its ``status``.

    ``status`` is ``ok`` while ``alive``, else ``stalled`` and the answer 503.
    """
    if liveness is None:
        return 200, b"ok\n", "text/plain"
    state = liveness()
    alive = bool(state.get("alive"))
    body = orjson.dumps({"status": "ok" if alive else "stalled", **state})
    return (200 if alive else 503), body, "application/json"


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
                self._answer(*health_answer(liveness))
            elif path == "/readyz":
                self._answer(*ready_answer(ready, details))
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
