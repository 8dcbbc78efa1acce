"""Structured logs for every service: JSON lines in Google Cloud Logging's format.

One line per event on stderr::

    {"severity": "INFO", "message": "loaded", "timestamp": "2026-11-22T05:02:00.123Z",
     "logging.googleapis.com/labels": {"service": "loader"}, "logger": "…", "rows": 500}

Notes:
    stdlib ``logging`` records (Google clients, Spark's py4j, uvicorn) go through the same
    processors, so every line has the same shape. Calling ``configure_logging`` again
    replaces the handler it installed before (tests, reloads) instead of adding another.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import MutableMapping
from typing import Any, TextIO

import structlog
from structlog.typing import EventDict, Processor, WrappedLogger

LABELS_KEY = "logging.googleapis.com/labels"
_NOISY = (
    "google",
    "google.auth",
    "google.api_core",
    "google.cloud",
    "grpc",
    "urllib3",
    "httpx",
    "httpcore",
    "py4j",
    "uvicorn.access",
    "tenacity",
)
_SEVERITY = {"exception": "ERROR", "warn": "WARNING", "critical": "CRITICAL", "fatal": "CRITICAL"}
_HANDLER_MARK = "_plowline_handler"


class _CloudLoggingFields:
    """Rename structlog's keys to the ones Cloud Logging reads and add the service label."""

    def __init__(self, service: str) -> None:
        self._service = service

    def __call__(self, logger: WrappedLogger, method: str, event: EventDict) -> EventDict:
        level = str(event.pop("level", method) or "info").lower()
        out: MutableMapping[str, Any] = {
            "severity": _SEVERITY.get(level, level.upper()),
            "message": str(event.pop("event", "")),
            "timestamp": event.pop("timestamp", None),
            LABELS_KEY: {**event.pop(LABELS_KEY, {}), "service": self._service},
        }
        out.update(event)
        return dict(out)


def _shared_processors() -> list[Processor]:
    return [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_logger_name,
        structlog.stdlib.add_log_level,
        structlog.stdlib.PositionalArgumentsFormatter(),
        structlog.processors.TimeStamper(fmt="iso", utc=True, key="timestamp"),
        structlog.processors.StackInfoRenderer(),
        structlog.processors.format_exc_info,
    ]


def configure_logging(
    service: str, level: str = "INFO", json: bool = True, stream: TextIO | None = None
) -> None:
    """Route structlog and stdlib logging to JSON lines (or readable lines) on ``stream``.

    Notes:
        ``stream`` defaults to ``sys.stderr`` as it is when called. ``json=False`` prints
        coloured console lines for people at a terminal.
    """
    shared = _shared_processors()
    renderer: Processor = (
        structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer(colors=False)
    )
    final: list[Processor] = [structlog.stdlib.ProcessorFormatter.remove_processors_meta]
    if json:
        final.append(_CloudLoggingFields(service))
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=shared, processors=[*final, renderer]
    )
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(formatter)
    setattr(handler, _HANDLER_MARK, True)
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, _HANDLER_MARK, False)]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    for name in _NOISY:
        logging.getLogger(name).setLevel(max(logging.WARNING, root.level))
    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            *shared,
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )
