"""Specification of the command chassis: versions, and bad settings named by flag and variable."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from plowline_cloud.chassis import EXIT_USAGE, package_version
from plowline_deadletter.cli import main as deadletter_main
from plowline_loader.cli import main as loader_main
from plowline_mutator.cli import main as mutator_main
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


@pytest.mark.parametrize(
    ("main", "program"),
    [
        pytest.param(loader_main, "plowline-loader", id="loader"),
        pytest.param(mutator_main, "plowline-mutator", id="mutator"),
        pytest.param(repeater_main, "plowline-repeater", id="repeater"),
        pytest.param(deadletter_main, "plowline-deadletter", id="deadletter"),
    ],
)
def test_every_service_says_its_version(
    main: Callable[[list[str]], int], program: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--version`` prints the program and its installed version, and exits 0."""
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])

    expected = (0, f"{program} {package_version(program)}")
    assert (exit_.value.code, capsys.readouterr().out.strip()) == expected
