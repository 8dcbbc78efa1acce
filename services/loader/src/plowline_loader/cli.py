"""The ``plowline-loader`` console entry: one argparse subcommand per module.

Each command module exposes ``register(subparsers)``, which adds its parser and sets
``handler`` (a ``Callable[[argparse.Namespace], int]``) as a default. Adding ``run`` or
``backfill`` means writing ``run_command.py`` and listing it in ``_COMMANDS``; a command's
heavy imports (Spark) stay inside its handler so that other commands start fast.

Exit codes (every command): 0 done, 1 a dependency failed (retry later), 2 usage or
configuration error.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from importlib import import_module
from importlib.metadata import PackageNotFoundError, version

EXIT_OK = 0
EXIT_UNAVAILABLE = 1
EXIT_USAGE = 2

# Command modules, imported when the parser is built (they import this module's constants).
_COMMANDS = (
    "plowline_loader.transform_command",
    "plowline_loader.run_command",
    "plowline_loader.backfill_command",
)


def loader_version() -> str:
    """Return the installed plowline-loader version (the bad rows' processor version)."""
    try:
        return version("plowline-loader")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "0.0.0"


def build_parser() -> argparse.ArgumentParser:
    """Return the top-level parser with every subcommand registered."""
    parser = argparse.ArgumentParser(
        prog="plowline-loader",
        description="Load Snowplow enriched events into BigQuery (plowline loader).",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {loader_version()}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in _COMMANDS:
        import_module(module).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the arguments, run the chosen command, and return its exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Callable[[argparse.Namespace], int] = args.handler
    return handler(args)


if __name__ == "__main__":
    sys.exit(main())
