"""The command chassis every plowline service shares: exit codes, errors, signals, versions.

Each service is its settings, its composition root (``bootstrap.py``) and its processing,
as a Snowplow common-streams app is; what every command does the same way is here, once:

- the exit codes of every command: :data:`EXIT_OK` (done, or stopped on request),
  :data:`EXIT_UNAVAILABLE` (a dependency failed or a stream ended: retry later, restart),
  :data:`EXIT_USAGE` (usage or configuration error: fix the command line);
- :func:`guarded`, which turns the exception tree into those codes and one line on stderr;
- :func:`describe_errors`, which names a bad setting by its flag AND its variable
  (:func:`flag_names` reads the flags off the parser, Snowplow's camelCase included);
- :func:`stop_on_signals`, the graceful stop (SIGTERM, SIGINT) as a ``threading.Event``;
- :func:`command_parser`, a service's top-level parser and its subcommands;
- :func:`add_version` and :func:`package_version`, what ``--version`` and the bad rows'
  processor say.

The lifecycle of a long-running command (health, readiness and metrics on ``--port``, the
run-until-stopped loop, "a consumer whose stream ended is not alive") is
:mod:`plowline_cloud.liveness`; the default subcommand is :mod:`plowline_cloud.command_line`.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Callable, Mapping
from importlib.metadata import PackageNotFoundError, version
from types import FrameType
from typing import TypeAlias

from plowline_core.errors import ConfigError, PlowlineError
from pydantic import ValidationError

EXIT_OK = 0
EXIT_UNAVAILABLE = 1
EXIT_USAGE = 2

# A string alias: _SubParsersAction is generic only to type checkers.
Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def guarded(prog: str, command: Callable[[], int]) -> int:
    """Run ``command``; a ConfigError exits 2, any other plowline error 1, each said on stderr."""
    try:
        return command()
    except ConfigError as error:
        print(f"{prog}: {error}", file=sys.stderr, flush=True)
        return EXIT_USAGE
    except PlowlineError as error:
        print(f"{prog}: {error}", file=sys.stderr, flush=True)
        return EXIT_UNAVAILABLE


def describe_errors(
    error: ValidationError, env_prefix: str, flags: Mapping[str, str] | None = None
) -> str:
    """Return one line per invalid setting: ``--flag (VARIABLE): problem (got value)``.

    ``flags`` maps a setting to the flag that sets it when that is not ``--`` and the
    setting's name in kebab case (Snowplow's camelCase flags: ``max_rows`` → ``--maxRows``).
    """
    spelled = flags or {}
    lines = []
    for item in error.errors():
        name = str(item["loc"][0]) if item["loc"] else "settings"
        flag = spelled.get(name, "--" + name.replace("_", "-"))
        got = f" (got {item['input']!r})" if item["type"] != "missing" else ""
        lines.append(f"{flag} ({env_prefix}{name.upper()}): {item['msg']}{got}")
    return "invalid settings: " + "; ".join(lines)


def command_parser(prog: str, description: str) -> tuple[argparse.ArgumentParser, Subparsers]:
    """Return a service's top-level parser (with ``--version``) and its required subcommands.

    ``prog`` is also the distribution whose version ``--version`` prints.
    """
    parser = argparse.ArgumentParser(prog=prog, description=description)
    add_version(parser, prog)
    return parser, parser.add_subparsers(dest="command", metavar="COMMAND", required=True)


def add_version(parser: argparse.ArgumentParser, distribution: str) -> None:
    """Add ``--version``: print ``<prog> <installed version of distribution>`` and exit 0."""
    parser.add_argument(
        "--version", action="version", version=f"%(prog)s {package_version(distribution)}"
    )


def flag_names(parser: argparse.ArgumentParser, command: str | None = None) -> dict[str, str]:
    """Return each setting of ``parser`` (or its subcommand ``command``) with its first flag.

    What :func:`describe_errors` names a bad setting by: ``{"max_rows": "--maxRows"}``.
    """
    if command is not None:
        parser = _subparsers(parser)[command]
    return {
        action.dest: action.option_strings[0]
        for action in parser._actions
        if action.option_strings and action.dest not in ("help", "version")
    }


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    commands: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:  # argparse exposes no public way to list subcommands
        if isinstance(action, argparse._SubParsersAction):
            commands.update(action.choices)
    return commands


def stop_on_signals(stop: threading.Event | None = None) -> threading.Event:
    """Make SIGTERM and SIGINT (Ctrl-C) set ``stop`` (a new event if None): the graceful stop.

    Notes:
        Call it again after starting anything that installs its own handler (pyspark's
        ``SparkContext`` takes SIGINT to raise ``KeyboardInterrupt``). Main thread only.
    """
    event = threading.Event() if stop is None else stop

    def handle(signum: int, frame: FrameType | None) -> None:
        event.set()

    signal.signal(signal.SIGTERM, handle)
    signal.signal(signal.SIGINT, handle)
    return event


def package_version(distribution: str) -> str:
    """Return the installed version of ``distribution`` (0.0.0 from a never-installed tree)."""
    try:
        return version(distribution)
    except PackageNotFoundError:
        return "0.0.0"
