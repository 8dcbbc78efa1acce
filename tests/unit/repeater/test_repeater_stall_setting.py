"""The repeater's stall timeout must outlast the longest wait by design (backoff + window)."""

from __future__ import annotations

from pathlib import Path

import pytest
from plowline_repeater.settings import RepeaterSettings
from pydantic import ValidationError

_REQUIRED = {
    "config": Path("config.json"),
    "resolver": Path("resolver.json"),
    "failed_inserts_sub": "sub",
    "dead_end_bucket": "gs://bucket",
}


def test_default_stall_timeout_outlasts_the_default_backoff() -> None:
    """The defaults start: 1800 s of stall timeout against 900 s backoff + 30 s window."""
    settings = RepeaterSettings(**_REQUIRED)
    expected = (1800.0, True)
    assert expected == (
        settings.stall_timeout,
        settings.stall_timeout > settings.backoff_period + settings.window,
    )


def test_stall_timeout_within_the_backoff_is_refused() -> None:
    """A stall timeout a row may legitimately wait out is refused, saying what to raise."""
    with pytest.raises(ValidationError, match="raise stallTimeout"):
        RepeaterSettings(**_REQUIRED, backoff_period=900, window=30, stall_timeout=930)


def test_stall_timeout_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """PLOWLINE_REPEATER_STALL_TIMEOUT sets the stall timeout."""
    monkeypatch.setenv("PLOWLINE_REPEATER_STALL_TIMEOUT", "2400")
    expected = 2400.0
    assert expected == RepeaterSettings(**_REQUIRED).stall_timeout
