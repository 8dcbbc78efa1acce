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


def test_default_stall_timeout_is_1800_seconds() -> None:
    """With the default backoff (900 s) and window (30 s) the stall timeout is 1800 s."""
    expected = 1800.0
    assert expected == RepeaterSettings(**_REQUIRED).stall_timeout_s


def test_default_stall_timeout_follows_a_long_backoff() -> None:
    """A backoff longer than the default stall timeout raises it: backoff + window + 300 s."""
    settings = RepeaterSettings(**_REQUIRED, backoff_period=3600, window=30)
    expected = 3930.0
    assert expected == settings.stall_timeout_s


def test_stall_timeout_within_the_backoff_is_refused() -> None:
    """A stall timeout a row may legitimately wait out is refused, saying what to raise."""
    with pytest.raises(ValidationError, match="raise stallTimeout"):
        RepeaterSettings(**_REQUIRED, backoff_period=900, window=30, stall_timeout=930)


def test_stall_timeout_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """PLOWLINE_REPEATER_STALL_TIMEOUT sets the stall timeout."""
    monkeypatch.setenv("PLOWLINE_REPEATER_STALL_TIMEOUT", "2400")
    expected = 2400.0
    assert expected == RepeaterSettings(**_REQUIRED).stall_timeout_s
