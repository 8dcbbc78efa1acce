"""The 2.x loaders' monitoring webhook: heartbeats and setup alerts, and when each is due.

Payloads are self-describing JSON (Iglu Central ``com.snowplowanalytics.monitoring.loader``):

    heartbeat/1-0-0   {"appName", "appVersion", "tags"}              while healthy
    alert/1-0-0       {"appName", "appVersion", "message", "tags"}   while a setup error lasts

``WebhookSchedule.due`` says what to send: a status is sent when it changes, and sent
again every ``heartbeat_s`` while it lasts (as common-streams' ``Webhook`` repeats the
last status); nothing while the status is unknown (the loader not started yet).

Notes:
    Pure: the time is passed in (monotonic seconds). An alert's message is cut to 4096
    characters, the schema's limit.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from plowline_core.iglu.key import SchemaKey

HEARTBEAT = SchemaKey.parse(
    "iglu:com.snowplowanalytics.monitoring.loader/heartbeat/jsonschema/1-0-0"
)
ALERT = SchemaKey.parse("iglu:com.snowplowanalytics.monitoring.loader/alert/jsonschema/1-0-0")
MAX_ALERT_MESSAGE = 4096


@dataclass(frozen=True, slots=True)
class Healthy:
    """The loader runs: heartbeats are due."""


@dataclass(frozen=True, slots=True)
class SetupAlert:
    """A setup error the user must fix (table missing, no access, a column not addable)."""

    message: str


Status = Healthy | SetupAlert


def heartbeat(app: str, version: str, tags: Mapping[str, str]) -> dict[str, Any]:
    """Return the heartbeat payload."""
    data = {"appName": app, "appVersion": version, "tags": dict(tags)}
    return {"schema": HEARTBEAT.to_uri(), "data": data}


def alert(app: str, version: str, message: str, tags: Mapping[str, str]) -> dict[str, Any]:
    """Return the alert payload (the message cut to the schema's 4096 characters)."""
    data = {
        "appName": app,
        "appVersion": version,
        "message": message[:MAX_ALERT_MESSAGE],
        "tags": dict(tags),
    }
    return {"schema": ALERT.to_uri(), "data": data}


class WebhookSchedule:
    """Decide when a status is sent: on every change, then every ``heartbeat_s``."""

    def __init__(self, heartbeat_s: float) -> None:
        self._every = heartbeat_s
        self._sent: Status | None = None
        self._at = 0.0

    def due(self, status: Status | None, now_s: float) -> Status | None:
        """Return the status to send at ``now_s`` (and remember it as sent), or None."""
        if status is None:
            return None
        if status != self._sent or now_s - self._at >= self._every:
            self._sent, self._at = status, now_s
            return status
        return None
