"""The ``plowline-mutator`` command line: one subcommand per module.

Each subcommand module exposes ``register(subparsers)``, which adds its parser and sets
``handler`` (``(args) -> exit code``) as a default; add a module to ``_COMMANDS`` to add
a subcommand (``create``, ``listen``, ``add-column``, ``serve`` ...).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from plowline_cloud.chassis import command_parser

from plowline_mutator import add_column, create, listen, preview, serve

_COMMANDS = (create, listen, add_column, serve, preview)


def build_parser() -> argparse.ArgumentParser:
    """Return the parser with every subcommand registered."""
    parser, subparsers = command_parser(
        "plowline-mutator",
        "Keep a Snowplow BigQuery events table's columns in step with the events.",
    )
    for command in _COMMANDS:
        command.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the subcommand named in ``argv``; return its exit code (2 for usage errors)."""
    args = build_parser().parse_args(argv)
    code: int = args.handler(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
