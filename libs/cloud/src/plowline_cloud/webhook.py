"""Send 2.x's webhook alerts and heartbeats (payloads: ``plowline_core.webhook``) over HTTP.

``WebhookSender`` owns one daemon thread. ``alert(message)`` only queues (it never waits
on the network, so the loader's batches never do); the thread POSTs each alert, and a
heartbeat every ``heartbeat_s`` while ``healthy()`` says so (the first one interval after
``start``). Each POST has a ``timeout_s`` bound; an answer other than 2xx, a timeout or a
connection error is logged and counted, never raised: monitoring must not stop loading.

Metrics (``plowline_<service>_webhook_posts_total``, labels ``kind`` alert|heartbeat and
``result`` sent|failed|dropped): ``dropped`` counts alerts that found the queue full.

Notes:
    ``alert`` sends the same message once until ``clear()`` (a setup error retried every
    backoff would otherwise alert on every attempt); the loader clears when a batch goes
    through again. Nothing is retried: 2.x does not retry a failed webhook either, and
    the next alert or heartbeat follows anyway.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import httpx
import orjson
import structlog
from plowline_core.webhook import WebhookSettings, alert_payload, heartbeat_payload

from plowline_cloud.metrics import MetricsRegistry

_log = structlog.get_logger("plowline.webhook")

DEFAULT_TIMEOUT_S = 5.0
_QUEUE_SIZE = 64


class WebhookSender:
    """POSTs alerts and heartbeats to one endpoint from its own thread (see the module)."""

    def __init__(
        self,
        settings: WebhookSettings,
        app_name: str,
        app_version: str,
        healthy: Callable[[], bool],
        registry: MetricsRegistry | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._settings = settings
        self._app = (app_name, app_version)
        self._healthy = healthy
        self._client = httpx.Client(timeout=timeout_s, transport=transport)
        self._queue: queue.Queue[str | None] = queue.Queue(_QUEUE_SIZE)
        self._alerted: set[str] = set()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="plowline-webhook", daemon=True)
        self._posts = (
            registry.counter(
                f"{registry.service}_webhook_posts",
                "Webhook alerts and heartbeats by result (sent, failed, dropped)",
                ["kind", "result"],
            )
            if registry is not None
            else None
        )

    def start(self) -> None:
        """Start the sending thread."""
        self._thread.start()

    def alert(self, message: str) -> bool:
        """Queue an alert (once per message until ``clear``); say whether it was queued."""
        with self._lock:
            if message in self._alerted:
                return False
            self._alerted.add(message)
        try:
            self._queue.put_nowait(message)
        except queue.Full:
            self._count("alert", "dropped")
            _log.warning("webhook alert dropped: too many waiting", message=message)
            return False
        return True

    def clear(self) -> None:
        """Let the alerts already sent be sent again (the problem went away)."""
        with self._lock:
            self._alerted.clear()

    def stop(self, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        """Send what is queued (within ``timeout_s``), then stop the thread."""
        with contextlib.suppress(queue.Full):  # full: the thread is stuck; join bounds it
            self._queue.put(None, timeout=timeout_s)
        self._thread.join(timeout_s)
        if not self._thread.is_alive():  # else a POST is still in flight: leave it its client
            self._client.close()

    def _run(self) -> None:
        due = time.monotonic() + self._settings.heartbeat_s
        while True:
            try:
                item = self._queue.get(timeout=max(0.0, due - time.monotonic()))
            except queue.Empty:
                if self._healthy():
                    name, version = self._app
                    self._post("heartbeat", heartbeat_payload(name, version, self._settings.tags))
                due = time.monotonic() + self._settings.heartbeat_s
                continue
            if item is None:
                return
            name, version = self._app
            self._post("alert", alert_payload(name, version, item, self._settings.tags))

    def _post(self, kind: str, payload: Mapping[str, Any]) -> None:
        try:
            answer = self._client.post(
                self._settings.endpoint,
                content=orjson.dumps(payload),
                headers={"Content-Type": "application/json"},
            )
        except httpx.HTTPError as error:
            self._failed(kind, f"{type(error).__name__}: {error}")
            return
        if not answer.is_success:
            self._failed(kind, f"HTTP {answer.status_code}")
            return
        self._count(kind, "sent")

    def _failed(self, kind: str, error: str) -> None:
        self._count(kind, "failed")
        _log.warning(
            "webhook post failed (not retried)",
            kind=kind,
            endpoint=self._settings.endpoint,
            error=error,
        )

    def _count(self, kind: str, result: str) -> None:
        if self._posts is not None:
            self._posts.labels(kind=kind, result=result).inc()
