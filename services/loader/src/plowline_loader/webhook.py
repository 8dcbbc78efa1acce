"""The monitoring webhook's sender: a daemon thread posting heartbeats (and setup alerts).

``WebhookSender(endpoint, ...)`` polls a status function once a second and posts what
``plowline_core.webhook.WebhookSchedule`` says is due (2.x's ``monitoring.webhook``:
``endpoint``, ``tags``, ``heartbeat``). The loader's status is ``Healthy`` once its query
runs (``Readiness``), unknown before.

Notes:
    A failed post is logged and not retried (the next heartbeat follows): monitoring must
    never hold the loader back. Setup alerts have a payload (``plowline_core.webhook``)
    but no trigger yet: the loader does not yet tell a setup error from a transient one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping

import httpx
import structlog
from plowline_core.webhook import Healthy, SetupAlert, Status, WebhookSchedule, alert, heartbeat

_log = structlog.get_logger("plowline.loader")

APP_NAME = "plowline-loader"
POLL_S = 1.0


class WebhookSender:
    """Post the loader's status to the webhook when it is due, until stopped."""

    def __init__(
        self,
        endpoint: str,
        version: str,
        status: Callable[[], Status | None],
        heartbeat_s: float = 300.0,
        tags: Mapping[str, str] | None = None,
        client: httpx.Client | None = None,
    ) -> None:
        self._endpoint = endpoint
        self._version = version
        self._status = status
        self._schedule = WebhookSchedule(heartbeat_s)
        self._tags = dict(tags or {})
        self._client = client or httpx.Client(timeout=10.0)
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="plowline-webhook", daemon=True)

    def start(self) -> WebhookSender:
        """Start posting in the background; return self."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop posting (waits for a post in flight)."""
        self._stopped.set()
        self._thread.join(timeout=15)

    def tick(self, now_s: float) -> bool:
        """Post what is due at ``now_s``; say whether something was posted."""
        due = self._schedule.due(self._status(), now_s)
        if due is None:
            return False
        if isinstance(due, Healthy):
            payload = heartbeat(APP_NAME, self._version, self._tags)
        else:
            payload = alert(APP_NAME, self._version, due.message, self._tags)
        try:
            response = self._client.post(self._endpoint, json=payload)
            if response.is_success:
                return True
            _log.error("webhook refused", endpoint=self._endpoint, status=response.status_code)
        except httpx.HTTPError as error:
            _log.error("webhook unreachable", endpoint=self._endpoint, error=str(error))
        return False

    def _run(self) -> None:
        while not self._stopped.is_set():
            self.tick(time.monotonic())
            self._stopped.wait(POLL_S)


def readiness_status(started: Callable[[], bool]) -> Callable[[], Status | None]:
    """Return the status function of a loader whose query runs when ``started()`` says so."""

    def status() -> Status | None:
        return Healthy() if started() else None

    return status


__all__ = ["SetupAlert", "WebhookSender", "readiness_status"]
