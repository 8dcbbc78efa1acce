"""Specification of the command chassis: a bad setting is named by its flag and its variable."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from plowline_cloud.chassis import EXIT_USAGE
from plowline_deadletter.cli import main as deadletter_main
from plowline_repeater.cli import main as repeater_main


@pytest.mark.parametrize(
    ("main", "argv", "expected"),
    [
        pytest.param(
            deadletter_main,
            ["--config=e30=", "--maxRows=0"],
            "--maxRows (PLOWLINE_DEADLETTER_MAX_ROWS)",
            id="deadletter-camel-case",
        ),
        pytest.param(
            deadletter_main,
            ["--config=e30=", "--port=70000"],
            "--port (PLOWLINE_DEADLETTER_PORT)",
            id="deadletter-port",
        ),
        pytest.param(
            repeater_main,
            ["--config=e30=", "--resolver=e30=", "--bufferSize=0"],
            "--bufferSize (PLOWLINE_REPEATER_BUFFER_SIZE)",
            id="repeater-camel-case",
        ),
        pytest.param(
            repeater_main,
            ["--config=e30=", "--resolver=e30=", "--desperatesWindow=-1"],
            "--window (PLOWLINE_REPEATER_WINDOW)",
            id="repeater-alias",
        ),
    ],
)
def test_a_bad_setting_is_named_by_flag_and_variable(
    main: Callable[[list[str]], int],
    argv: list[str],
    expected: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Every service says which flag and which variable hold a bad value, and exits 2."""
    code = main(argv)

    stderr = capsys.readouterr().err
    assert (code, expected in stderr) == (EXIT_USAGE, True), stderr
