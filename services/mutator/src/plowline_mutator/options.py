"""Flags shared by the mutator's subcommands, and the wrapper that turns errors into exit codes.

Exit codes (``plowline_cloud.chassis``): 0 done, 1 the job failed (BigQuery, Pub/Sub or
Iglu refused or failed), 2 usage or configuration error.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TypeAlias

import structlog
from plowline_cloud.chassis import EXIT_UNAVAILABLE, EXIT_USAGE
from plowline_cloud.config_source import IGLU_CONFIG_HELP, load_pipeline_config
from plowline_cloud.iglu import NOT_FOUND_HELP
from plowline_cloud.liveness import STALL_TIMEOUT_HELP
from plowline_cloud.logging import configure_logging
from plowline_core.errors import ConfigError, PlowlineError
from plowline_core.schema.entity import ColumnMode, ShredProperty

from plowline_mutator.settings import MutatorSettings, settings_from_args

SERVICE = "plowline-mutator"

# A string alias: _SubParsersAction is generic only to type checkers.
Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
Job = Callable[[MutatorSettings, argparse.Namespace], int]


def add_config(parser: argparse.ArgumentParser, resolver: bool = True) -> None:
    """Add ``--config`` and ``--resolver`` (every subcommand), and the Iglu flags if ``resolver``.

    Both take a path or base64 of JSON or HOCON, as Snowplow 0.x, 1.x and 2.x pass them
    (2.x's ``--iglu-config`` is ``--resolver``); ``--types-subscription`` names the types
    subscription of a 2.x config, which has no key for it.
    """
    parser.add_argument(
        "--config",
        metavar="PATH|BASE64",
        help="Snowplow config: 0.x bigquery_config JSON, 1.x or 2.x HOCON, a path or base64 "
        "(or PLOWLINE_MUTATOR_CONFIG)",
    )
    parser.add_argument("--iglu-config", metavar="PATH|BASE64", help=IGLU_CONFIG_HELP)
    parser.add_argument(
        "--types-subscription",
        metavar="projects/P/subscriptions/S",
        help="2.x config: the types subscription (default: projects/P/subscriptions/"
        "plowline-<dataset>-<table>-types; or PLOWLINE_V2_TYPES_SUBSCRIPTION)",
    )
    parser.add_argument(
        "--resolver",
        metavar="PATH|BASE64",
        help="Iglu resolver config, JSON or HOCON, a path or base64 (or PLOWLINE_MUTATOR_RESOLVER)"
        + ("" if resolver else "; accepted as Snowplow passes it, not needed by this command"),
    )
    if resolver:
        parser.add_argument(
            "--column-mode",
            type=ColumnMode,
            choices=list(ColumnMode),
            help="full: one column per full SchemaVer (default); major: one per model",
        )
        parser.add_argument(
            "--iglu-not-found",
            metavar="NAME=STATUS,…;…",
            help=NOT_FOUND_HELP + " (or PLOWLINE_MUTATOR_IGLU_NOT_FOUND)",
        )


def add_listener_flags(parser: argparse.ArgumentParser) -> None:
    """Add the types listener's ``--stall-timeout`` and ``--verbose`` (``listen``, ``serve``)."""
    parser.add_argument(
        "--stall-timeout",
        type=float,
        metavar="SECONDS",
        help=f"{STALL_TIMEOUT_HELP} (default 300, or PLOWLINE_MUTATOR_STALL_TIMEOUT)",
    )
    parser.add_argument(
        "--verbose",
        action="store_true",
        default=None,
        help="log every message's types (and debug logs)",
    )


def run_job(job: Job, args: argparse.Namespace) -> int:
    """Build settings, configure logging and run ``job``; map errors to exit codes."""
    try:
        settings = settings_from_args(args)
        if settings.config is not None:  # a 2.x config brings its column mode (warned later)
            settings = settings.with_config(
                load_pipeline_config(settings.config, warn=lambda _: None)
            )
    except ConfigError as error:
        print(f"{SERVICE}: {error}", file=sys.stderr)
        return EXIT_USAGE
    level = "DEBUG" if settings.verbose else settings.log_level
    configure_logging(SERVICE, level, settings.log_json)
    log = structlog.get_logger("plowline.mutator")
    try:
        return job(settings, args)
    except ConfigError as error:
        print(f"{SERVICE}: {error}", file=sys.stderr)
        return EXIT_USAGE
    except PlowlineError as error:
        log.error("command failed", command=args.command, error=str(error))
        return EXIT_UNAVAILABLE


def shred_property(text: str) -> ShredProperty:
    """Parse ``--shredProperty``/``--shred-property`` (any case): CONTEXTS, DERIVED_CONTEXTS …

    Raises:
        argparse.ArgumentTypeError: not one of them (argparse prints the choices, exit 2).
    """
    try:
        return ShredProperty(text.upper())
    except ValueError:
        choices = ", ".join(ShredProperty)
        raise argparse.ArgumentTypeError(
            f"invalid shred property {text!r} (choose from {choices})"
        ) from None
