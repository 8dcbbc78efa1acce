"""Webhook monitoring as Snowplow's 2.x loaders send it: alerts and heartbeats, pure payloads.

A 2.x loader POSTs self-describing JSON to ``monitoring.webhook.endpoint``:

* an **alert** (``iglu:com.snowplowanalytics.monitoring.loader/alert/jsonschema/1-0-0``)
  when it meets a setup error, one an operator must fix (the table is missing, the loader
  has no access, a column cannot be added): ``{appName, appVersion, message, tags}``;
* a **heartbeat** (``…/heartbeat/jsonschema/1-0-0``) every ``heartbeat`` interval while
  it is healthy: ``{appName, appVersion, tags}``.

This module builds those payloads and says which loader errors are setup errors
(``setup_problem``); sending them is the adapter's (``plowline_cloud.webhook``).

Notes:
    Both schemas forbid other properties and cap ``appName``/``appVersion`` at 64 and
    ``message`` at 4096 characters: longer values are cut (a message ends with ``…``),
    so a payload is always valid. Tags are strings (the schema's ``additionalProperties``).
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from plowline_core.errors import ConfigError

ALERT_SCHEMA = "iglu:com.snowplowanalytics.monitoring.loader/alert/jsonschema/1-0-0"
HEARTBEAT_SCHEMA = "iglu:com.snowplowanalytics.monitoring.loader/heartbeat/jsonschema/1-0-0"
DEFAULT_HEARTBEAT_S = 300.0
"""2.x's default ``monitoring.webhook.heartbeat`` (5 minutes, as in ``plowline_core.v2_config``)."""

_NAME_MAX = 64
_MESSAGE_MAX = 4096


@dataclass(frozen=True, slots=True)
class WebhookSettings:
    """Where and how often to send: 2.x's ``monitoring.webhook`` (endpoint, tags, heartbeat)."""

    endpoint: str
    tags: Mapping[str, str] = field(default_factory=dict)
    heartbeat_s: float = DEFAULT_HEARTBEAT_S

    def __post_init__(self) -> None:
        if not re.match(r"^https?://[^/\s]+", self.endpoint):
            raise ConfigError(
                f"webhook endpoint {self.endpoint!r} is not an http:// or https:// URL"
            )
        if self.heartbeat_s <= 0:
            raise ConfigError(f"webhook heartbeat must be above 0 s (got {self.heartbeat_s})")


def parse_tags(text: str) -> dict[str, str]:
    """Return ``name=value,name=value`` as a dict (empty text: no tags).

    Raises:
        ConfigError: an item without ``=`` or with an empty name.
    """
    tags: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise ConfigError(f"webhook tag {item!r} is not name=value")
        tags[name.strip()] = value.strip()
    return tags


def alert_payload(
    app_name: str, app_version: str, message: str, tags: Mapping[str, str]
) -> dict[str, Any]:
    """Return the self-describing alert 2.x sends for ``message``."""
    data = _common(app_name, app_version, tags)
    data["message"] = _cut(message, _MESSAGE_MAX)
    return {"schema": ALERT_SCHEMA, "data": data}


def heartbeat_payload(app_name: str, app_version: str, tags: Mapping[str, str]) -> dict[str, Any]:
    """Return the self-describing heartbeat 2.x sends while healthy."""
    return {"schema": HEARTBEAT_SCHEMA, "data": _common(app_name, app_version, tags)}


def _common(app_name: str, app_version: str, tags: Mapping[str, str]) -> dict[str, Any]:
    return {
        "appName": _cut(app_name, _NAME_MAX),
        "appVersion": _cut(app_version, _NAME_MAX),
        "tags": {str(name): str(value) for name, value in tags.items()},
    }


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


class SetupProblem(enum.Enum):
    """A setup error: the loader cannot go on until an operator fixes something."""

    TABLE_MISSING = "the events table does not exist"
    NO_ACCESS = "the loader has no access"
    COLUMNS_NOT_ADDED = "columns cannot be added to the events table"


# Searched in the text of an error the loader met (Google's message kept by
# plowline_cloud.errors, perhaps inside a Spark task's failure): first match wins.
_PATTERNS: tuple[tuple[SetupProblem, re.Pattern[str]], ...] = (
    (
        SetupProblem.COLUMNS_NOT_ADDED,
        re.compile(r"too many (total leaf )?(fields|columns)|cannot add (fields|columns?)", re.I),
    ),
    (SetupProblem.TABLE_MISSING, re.compile(r"not ?found:? (table|dataset)", re.I)),
    (
        SetupProblem.NO_ACCESS,
        re.compile(r"\b403\b|permission[ _]?denied|access denied|forbidden", re.I),
    ),
)


# BigQuery throttles with 403 too; those reasons are transient, not a missing grant.
_THROTTLED = re.compile(r"rateLimitExceeded|quotaExceeded|backendError", re.I)


def setup_problem(error: str) -> SetupProblem | None:
    """Return the setup error ``error`` (an error's text) reports, or None for any other error."""
    for problem, pattern in _PATTERNS:
        if pattern.search(error):
            if problem is SetupProblem.NO_ACCESS and _THROTTLED.search(error):
                return None
            return problem
    return None


def alert_message(problem: SetupProblem, error: str) -> str:
    """Return an alert's message: the problem, then the line of ``error`` that shows it.

    A Spark task's failure is a page of stack trace; the line that matched is the one an
    operator needs (the whole error is in the loader's log).
    """
    pattern = dict(_PATTERNS)[problem]
    line = next((ln.strip() for ln in error.splitlines() if pattern.search(ln)), error.strip())
    return _cut(f"{problem.value}: {line}", _MESSAGE_MAX)
