"""The dead-letter writer's stall timeout must outlast its window (rows wait a window)."""

from __future__ import annotations

from pathlib import Path

import pytest
from plowline_deadletter.cli import build_parser
from plowline_deadletter.settings import DeadLetterSettings
from pydantic import ValidationError

_REQUIRED = {"config": Path("config.json"), "bad_rows_sub": "sub", "bucket": "gs://bucket"}


def test_stall_timeout_not_longer_than_the_window_is_refused() -> None:
    """A stall timeout of one window would restart a writer waiting for its object."""
    with pytest.raises(ValidationError, match="must be longer than window"):
        DeadLetterSettings(**_REQUIRED, window=60, stall_timeout=60)


def test_stall_timeout_flag_reaches_the_settings() -> None:
    """--stallTimeout on the command line becomes the setting."""
    args = vars(build_parser().parse_args(["run", "--stallTimeout", "900"]))
    args.pop("command")
    expected = 900.0
    assert expected == DeadLetterSettings(**_REQUIRED, **args).stall_timeout_s


def test_stall_timeout_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """PLOWLINE_DEADLETTER_STALL_TIMEOUT sets the stall timeout."""
    monkeypatch.setenv("PLOWLINE_DEADLETTER_STALL_TIMEOUT", "700")
    expected = 700.0
    assert expected == DeadLetterSettings(**_REQUIRED).stall_timeout_s


def test_default_stall_timeout_follows_a_long_window() -> None:
    """A window of an hour raises the default stall timeout to window + 300 s, never refused."""
    expected = 3900.0
    assert expected == DeadLetterSettings(**_REQUIRED, window=3600).stall_timeout_s
