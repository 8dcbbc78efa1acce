"""Specification of command_line: run by default, and Beam options set aside."""

from __future__ import annotations

import argparse

import pytest
from plowline_cloud.command_line import (
    option_names,
    split_unknown_options,
    with_default_command,
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="svc")
    commands = parser.add_subparsers(dest="command")
    for name in ("run", "replay"):
        commands.add_parser(name)
    return parser


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        pytest.param(
            ["--config=c", "--resolver", "r"],
            ["run", "--config=c", "--resolver", "r"],
            id="snowplow-arguments",
        ),
        pytest.param(["replay", "gs://b"], ["replay", "gs://b"], id="named-command"),
        pytest.param(["run", "--config=c"], ["run", "--config=c"], id="explicit-run"),
        pytest.param(["--help"], ["--help"], id="top-level-help"),
        pytest.param(["--version"], ["--version"], id="top-level-version"),
        pytest.param([], [], id="nothing"),
    ],
)
def test_run_is_put_in_front_when_no_command_is_named(argv: list[str], expected: list[str]) -> None:
    """Arguments naming no subcommand get ``run`` in front; anything else is left as it is."""
    assert expected == with_default_command(argv, _parser())


@pytest.mark.parametrize(
    ("extras", "expected"),
    [
        pytest.param(
            ["--runner=DataflowRunner", "--project=acme", "--streaming"],
            (["--runner=DataflowRunner", "--project=acme", "--streaming"], []),
            id="equals-and-bare",
        ),
        pytest.param(
            ["--region", "europe-west2", '--labels={"a": "b"}'],
            (["--region europe-west2", '--labels={"a": "b"}'], []),
            id="separate-value",
        ),
        pytest.param(
            ["--runner=DataflowRunner", "stray"],
            (["--runner=DataflowRunner"], ["stray"]),
            id="stray",
        ),
        pytest.param(["oops"], ([], ["oops"]), id="only-stray"),
        pytest.param(["--"], ([], ["--"]), id="double-dash"),
    ],
)
def test_unknown_options_are_split_from_stray_words(
    extras: list[str], expected: tuple[list[str], list[str]]
) -> None:
    """``--x=y``, ``--x`` and ``--x y`` are options to ignore; other words are stray."""
    assert expected == split_unknown_options(extras)


def test_option_names_leave_values_out() -> None:
    """Only the names are logged: a value may be a secret or a project id."""
    expected = ["--project", "--region", "--streaming"]

    assert expected == option_names(["--project=acme", "--region europe-west2", "--streaming"])
