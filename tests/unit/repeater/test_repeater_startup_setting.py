"""The repeater's start-up timeout: how long a start-up call may go unanswered before it exits."""

from __future__ import annotations

import pytest
from plowline_repeater.cli import build_parser
from plowline_repeater.settings import RepeaterSettings
from pydantic import ValidationError

_ARGS = ("run", "--config", "c", "--resolver", "r")


def _settings(*extra: str) -> RepeaterSettings:
    args = vars(build_parser().parse_args([*_ARGS, *extra]))
    args.pop("command")
    args.pop("handler")
    return RepeaterSettings(**args)


def test_default_startup_timeout_is_60_seconds() -> None:
    """Without the flag or its variable a start-up call may wait 60 s."""
    expected = 60.0
    assert expected == _settings().startup_timeout


@pytest.mark.parametrize(
    ("flag", "env", "expected"),
    [
        pytest.param(("--startupTimeout", "5"), None, 5.0, id="flag"),
        pytest.param((), "7.5", 7.5, id="variable"),
        pytest.param(("--startupTimeout", "5"), "7.5", 5.0, id="flag-wins"),
    ],
)
def test_startup_timeout_from_the_flag_or_the_environment(
    flag: tuple[str, ...], env: str | None, expected: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--startupTimeout, else PLOWLINE_REPEATER_STARTUP_TIMEOUT, sets the start-up timeout."""
    if env is not None:
        monkeypatch.setenv("PLOWLINE_REPEATER_STARTUP_TIMEOUT", env)
    assert expected == _settings(*flag).startup_timeout


def test_a_startup_timeout_of_zero_is_refused() -> None:
    """A start-up that could never wait is a settings error."""
    with pytest.raises(ValidationError, match="startup_timeout"):
        _settings("--startupTimeout", "0")
