"""Snowplow's command lines as they are: their input flags, ``run`` when no subcommand is named,
Beam options set aside.

Every service takes Snowplow's inputs the same way (``add_snowplow_inputs``, ``add_resolver``):
``--config`` and ``--resolver``, a path or base64 of JSON or HOCON, and 2.x's name for the
resolver, ``--iglu-config``.

Snowplow's container arguments name no subcommand (``--config=… --resolver=…``), and the
0.x/1.x Dataflow loader takes Beam options (``--runner=DataflowRunner --project=…
--region=… --tempLocation=gs://…``) that mean nothing to plowline. The services call
``with_default_command`` before parsing, and the loader's ``run`` sets unknown options
aside with ``split_unknown_options`` and names them in one warning.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from plowline_cloud.config_source import IGLU_CONFIG_HELP

_TOP_LEVEL = frozenset({"-h", "--help", "--version"})
_PATH_OR_BASE64 = "PATH|BASE64"


def add_snowplow_inputs(
    parser: argparse.ArgumentParser, *, config_help: str, resolver_help: str
) -> None:
    """Add ``--config``, ``--resolver`` and 2.x's ``--iglu-config`` (the settings fold it in)."""
    parser.add_argument("--config", metavar=_PATH_OR_BASE64, help=config_help)
    parser.add_argument("--resolver", metavar=_PATH_OR_BASE64, help=resolver_help)
    parser.add_argument("--iglu-config", metavar=_PATH_OR_BASE64, help=IGLU_CONFIG_HELP)


def add_resolver(parser: argparse.ArgumentParser, *, help: str) -> None:
    """Add a required ``--resolver``, spelt ``--iglu-config`` too (Snowplow 2.x's name)."""
    parser.add_argument(
        "--resolver", "--iglu-config", dest="resolver", required=True, metavar=_PATH_OR_BASE64,
        help=help,
    )  # fmt: skip


def with_default_command(
    argv: Sequence[str], parser: argparse.ArgumentParser, default: str = "run"
) -> list[str]:
    """Return ``argv`` with ``default`` in front when it names no subcommand of ``parser``.

    An empty ``argv`` and the top-level ``--help``/``--version`` are left as they are.
    """
    arguments = list(argv)
    if not arguments or arguments[0] in _TOP_LEVEL or arguments[0] in _commands(parser):
        return arguments
    return [default, *arguments]


def split_unknown_options(extras: Sequence[str]) -> tuple[list[str], list[str]]:
    """Split what argparse did not know into ignorable options and stray words.

    ``--name=value``, ``--flag`` and ``--name value`` (a word right after an option with
    no ``=``) are options; any other word is stray (a user mistake worth refusing).
    """
    options: list[str] = []
    stray: list[str] = []
    previous_takes_value = False
    for item in extras:
        if item.startswith("--") and len(item) > 2:
            options.append(item)
            previous_takes_value = "=" not in item
        elif previous_takes_value:
            options[-1] = f"{options[-1]} {item}"
            previous_takes_value = False
        else:
            stray.append(item)
    return options, stray


def option_names(options: Sequence[str]) -> list[str]:
    """Return the option names only (``--project=acme`` → ``--project``): values may be secret."""
    return [option.split("=", 1)[0].split(" ", 1)[0] for option in options]


def _commands(parser: argparse.ArgumentParser) -> set[str]:
    names: set[str] = set()
    for action in parser._actions:  # argparse exposes no public way to list subcommands
        if isinstance(action, argparse._SubParsersAction):
            names.update(action.choices)
    return names
