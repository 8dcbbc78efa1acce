"""Log lines are JSON in Google Cloud Logging's structured format."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
import structlog
from plowline_cloud.logging import LABELS_KEY, configure_logging


@pytest.fixture
def stream() -> Iterator[io.StringIO]:
    """Configure logging into a buffer and undo it afterwards."""
    buffer = io.StringIO()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    configure_logging("loader", level="INFO", stream=buffer)
    yield buffer
    root.handlers[:] = handlers
    root.setLevel(level)
    structlog.reset_defaults()


def _lines(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_structlog_event_shape(stream: io.StringIO) -> None:
    """A structlog event has severity, message, the service label and its own fields."""
    structlog.get_logger("plowline.test").info("loaded", rows=500)
    line = _lines(stream)[0]
    line.pop("timestamp")
    expected = {
        "severity": "INFO",
        "message": "loaded",
        LABELS_KEY: {"service": "loader"},
        "logger": "plowline.test",
        "rows": 500,
    }
    assert expected == line


def test_timestamp_is_utc_iso(stream: io.StringIO) -> None:
    """The timestamp is an ISO-8601 UTC time Cloud Logging can read."""
    structlog.get_logger().info("tick")
    assert _lines(stream)[0]["timestamp"].endswith("Z")


def test_stdlib_records_share_the_shape(stream: io.StringIO) -> None:
    """A stdlib logging record comes out in the same JSON shape, arguments formatted."""
    logging.getLogger("plowline.stdlib").warning("retrying %s", "insert")
    line = _lines(stream)[0]
    expected = ("WARNING", "retrying insert", {"service": "loader"})
    assert expected == (line["severity"], line["message"], line[LABELS_KEY])


def test_exception_is_error_with_traceback(stream: io.StringIO) -> None:
    """``log.exception`` gives severity ERROR and the traceback text."""
    try:
        raise RuntimeError("kaboom")
    except RuntimeError:
        structlog.get_logger().exception("failed")
    line = _lines(stream)[0]
    expected = ("ERROR", True)
    assert expected == (line["severity"], "RuntimeError: kaboom" in line["exception"])


def test_level_filters_debug(stream: io.StringIO) -> None:
    """Below the configured level nothing is written."""
    structlog.get_logger().debug("hidden")
    logging.getLogger("plowline.stdlib").debug("hidden too")
    expected = ""
    assert expected == stream.getvalue()


def test_noisy_libraries_are_quiet(stream: io.StringIO) -> None:
    """Google client INFO chatter is not written."""
    logging.getLogger("google.api_core.retry").info("retrying in 1s")
    expected = ""
    assert expected == stream.getvalue()


def test_reconfiguring_replaces_the_handler(stream: io.StringIO) -> None:
    """Configuring twice writes each line once, to the latest stream only."""
    second = io.StringIO()
    configure_logging("mutator", stream=second)
    structlog.get_logger().info("once")
    expected = ("", [{"service": "mutator"}])
    assert expected == (stream.getvalue(), [line[LABELS_KEY] for line in _lines(second)])
