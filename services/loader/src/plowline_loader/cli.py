"""The ``plowline-loader`` console entry: one argparse subcommand per module.

Each command module exposes ``register(subparsers)``, which adds its parser and sets
``handler`` (a ``Callable[[argparse.Namespace], int]``) as a default. Adding ``run`` or
``backfill`` means writing ``run_command.py`` and listing it in ``_COMMANDS``; a command's
heavy imports (Spark) stay inside its handler so that other commands start fast.

``run`` is the default: Snowplow's own container arguments (``--config=… --resolver=…``,
plus the Dataflow loader's Beam options) start the streaming loader unchanged; options
``run`` does not know are set aside and named in one warning at start.

Exit codes (every command): ``plowline_cloud.chassis`` (0 done, 1 a dependency failed:
retry later, 2 usage or configuration error).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from importlib import import_module

from plowline_cloud.chassis import command_parser, package_version
from plowline_cloud.command_line import split_unknown_options, with_default_command

# Command modules, imported when the parser is built (they import ``loader_version``).
_COMMANDS = (
    "plowline_loader.transform_command",
    "plowline_loader.run_command",
    "plowline_loader.backfill_command",
    "plowline_loader.class_archive_command",
)


def loader_version() -> str:
    """Return the installed plowline-loader version (the bad rows' processor version)."""
    return package_version("plowline-loader")


def build_parser() -> argparse.ArgumentParser:
    """Return the top-level parser with every subcommand registered."""
    parser, subparsers = command_parser(
        "plowline-loader", "Load Snowplow enriched events into BigQuery (plowline loader)."
    )
    for module in _COMMANDS:
        import_module(module).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the arguments, run the chosen command, and return its exit code."""
    parser = build_parser()
    arguments = with_default_command(sys.argv[1:] if argv is None else argv, parser)
    args, extras = parser.parse_known_args(arguments)
    ignored, stray = split_unknown_options(extras)
    if stray or (ignored and args.command != "run"):
        parser.error(f"unrecognized arguments: {' '.join(extras)}")
    args.ignored_options = ignored
    handler: Callable[[argparse.Namespace], int] = args.handler
    return handler(args)


if __name__ == "__main__":
    sys.exit(main())
