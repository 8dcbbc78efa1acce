"""The ``plowline`` command: a tree of subcommands gathered from a registry.

Each command lives in its own module as a :class:`Command` value; :data:`COMMAND_MODULES`
lists where to find them (``module:attribute``). A command's ``path`` places it in the tree,
so ``("dev", "up")`` is ``plowline dev up``; groups on the way (``dev``) are created from
:data:`GROUP_HELP`. To add ``plowline demo`` or ``plowline dev generate``, write a module
with a ``Command`` and append it to :data:`COMMAND_MODULES`; installed packages may also
contribute commands through the ``plowline.commands`` entry-point group.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from importlib.metadata import entry_points


@dataclass(frozen=True, slots=True)
class Command:
    """One runnable subcommand: where it sits, what it says, its arguments and its action."""

    path: tuple[str, ...]
    help: str
    run: Callable[[argparse.Namespace], int]
    configure: Callable[[argparse.ArgumentParser], None] = field(default=lambda parser: None)
    description: str | None = None


COMMAND_MODULES: list[str] = [
    "plowline_devstack.stack.commands:COMMANDS",
    "plowline_devstack.demo.generate:COMMAND",
    "plowline_devstack.demo.command:COMMAND",
]
"""``module:attribute`` of a Command or a sequence of Commands; extend to add subcommands."""

GROUP_HELP: dict[tuple[str, ...], str] = {
    ("dev",): "run the local stack (Pub/Sub, BigQuery and Cloud Storage stand-ins)",
}
"""Help text of the command groups."""

ENTRY_POINT_GROUP = "plowline.commands"


def load_commands(specs: Iterable[str] = ()) -> list[Command]:
    """Import every registered command (the built-in list, ``specs`` and entry points)."""
    found: list[Command] = []
    for spec in [*COMMAND_MODULES, *specs]:
        module_name, _, attribute = spec.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise  # the module exists but is broken: a bug to surface, not to skip
            # A registered command not installed (yet) must not take the others down.
            print(f"plowline: command module {module_name} is not available", file=sys.stderr)
            continue
        found.extend(_as_commands(getattr(module, attribute)))
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        found.extend(_as_commands(entry.load()))
    return found


def _as_commands(value: object) -> list[Command]:
    if isinstance(value, Command):
        return [value]
    if isinstance(value, list | tuple) and all(isinstance(v, Command) for v in value):
        return list(value)
    raise TypeError(f"not a plowline Command or a sequence of them: {value!r}")


def build_parser(commands: Sequence[Command]) -> argparse.ArgumentParser:
    """Build the argparse tree of ``commands``."""
    root = argparse.ArgumentParser(
        prog="plowline",
        description="plowline: load Snowplow enriched events from Pub/Sub into BigQuery.",
    )
    groups: dict[tuple[str, ...], argparse._SubParsersAction[argparse.ArgumentParser]] = {}
    parsers: dict[tuple[str, ...], argparse.ArgumentParser] = {(): root}
    for command in sorted(commands, key=lambda c: c.path):
        for depth in range(1, len(command.path)):
            prefix = command.path[:depth]
            if prefix not in parsers:
                help_text = GROUP_HELP.get(prefix, "")
                parent = _subparsers(groups, parsers, prefix[:-1])
                parsers[prefix] = parent.add_parser(
                    prefix[-1], help=help_text, description=help_text
                )
        parent = _subparsers(groups, parsers, command.path[:-1])
        parser = parent.add_parser(
            command.path[-1], help=command.help, description=command.description or command.help
        )
        command.configure(parser)
        parser.set_defaults(_run=command.run)
    return root


def _subparsers(
    groups: dict[tuple[str, ...], argparse._SubParsersAction[argparse.ArgumentParser]],
    parsers: dict[tuple[str, ...], argparse.ArgumentParser],
    prefix: tuple[str, ...],
) -> argparse._SubParsersAction[argparse.ArgumentParser]:
    if prefix not in groups:
        groups[prefix] = parsers[prefix].add_subparsers(title="commands", metavar="COMMAND")
    return groups[prefix]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``plowline`` command line; return the exit status."""
    parser = build_parser(load_commands())
    args = parser.parse_args(argv)
    run: Callable[[argparse.Namespace], int] | None = getattr(args, "_run", None)
    if run is None:
        parser.parse_args([*(argv if argv is not None else sys.argv[1:]), "--help"])
        return 2
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
