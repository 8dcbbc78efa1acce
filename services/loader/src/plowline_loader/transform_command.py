"""``plowline-loader transform``: enriched TSV in, BigQuery-JSON rows and bad rows out.

No Pub/Sub, no BigQuery: the loader's transform on its own, for trying a resolver
config, inspecting rows before loading, or converting archived TSV.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from itertools import islice, repeat
from pathlib import Path
from typing import IO

from plowline_cloud.chassis import EXIT_OK, EXIT_UNAVAILABLE, EXIT_USAGE
from plowline_cloud.clock import SystemClock
from plowline_cloud.command_line import add_resolver
from plowline_cloud.config_source import load_pipeline_config
from plowline_cloud.iglu import NOT_FOUND_HELP, load_resolver
from plowline_core.badrows import BadRow, Processor
from plowline_core.errors import ConfigError, RegistryUnavailable
from plowline_core.event.model import EnrichedEvent
from plowline_core.event.parser import parse_bytes
from plowline_core.iglu.config import parse_not_found
from plowline_core.schema.entity import ColumnMode, EntityType
from plowline_core.transform.row import RowBuilder, TransformedRow

from plowline_loader.cli import loader_version

ARTIFACT = "plowline-loader"
# Measured: per-line writes and a Python generator per line cost a fifth of the command's time.
_CHUNK_LINES = 64  # lines between two writes: a chunk's rows (~100 KiB) stay in the CPU's cache
_READ_BUFFER = 1 << 20

_EPILOG = """\
outputs:
  good rows  one BigQuery-JSON object per line (insertAll "json"), to --good or stdout
  bad rows   one Snowplow bad row per line, to --bad or, by default, stderr
  summary    lines read, good, bad by type, entity types seen: on stderr at the end
exit codes:
  0  every line was handled (bad lines included: they are bad rows, not failures)
  1  an Iglu registry was unavailable; output stops at the line that needed it
  2  usage error, unreadable input, or invalid resolver config
"""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``transform`` subcommand."""
    parser = subparsers.add_parser(
        "transform",
        help="turn enriched TSV lines into BigQuery-JSON rows and bad rows",
        description="Turn enriched TSV lines into BigQuery-JSON rows (JSON lines) and bad rows.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_resolver(
        parser,
        help="Iglu resolver config (JSON or HOCON), as a path or base64 (2.x: --iglu-config)",
    )
    parser.add_argument(
        "--config",
        metavar="PATH|BASE64",
        help="Snowplow config (0.x JSON or 1.x HOCON): optional here, checked when given",
    )
    parser.add_argument(
        "--column-mode",
        choices=[mode.value for mode in ColumnMode],
        default=ColumnMode.FULL.value,
        help="full: one column per full SchemaVer (loader 1.x, default); major: per model (2.x)",
    )
    parser.add_argument("--iglu-not-found", metavar="NAME=STATUS,…;…", help=NOT_FOUND_HELP)
    parser.add_argument("--good", type=Path, metavar="FILE", help="good rows here (default stdout)")
    parser.add_argument("--bad", type=Path, metavar="FILE", help="bad rows here (default stderr)")
    parser.add_argument(
        "input", nargs="?", default="-", metavar="INPUT", help="enriched TSV file, or - for stdin"
    )
    parser.set_defaults(handler=run)


@dataclass
class Summary:
    """What one run saw: lines, good rows, bad rows by code, entity types."""

    lines: int = 0
    good: int = 0
    bad: Counter[str] = field(default_factory=Counter)
    types: set[EntityType] = field(default_factory=set)

    def render(self) -> str:
        """Return the human-readable summary printed on stderr."""
        bad = ", ".join(f"{code}={count}" for code, count in sorted(self.bad.items()))
        out = [f"lines={self.lines} good={self.good} bad={sum(self.bad.values())}"]
        out.append(f"bad by type: {bad or 'none'}")
        out.append(f"entity types seen: {len(self.types)}")
        out.extend(f"  {t.schema.to_uri()} {t.shred_property.value}" for t in sorted(self.types))
        return "\n".join(out)


def run(args: argparse.Namespace) -> int:
    """Run the transform over the input; return the exit code."""
    try:
        not_found = parse_not_found(args.iglu_not_found or "")
    except ConfigError as error:
        _say(f"invalid --iglu-not-found: {error}")
        return EXIT_USAGE
    try:
        if args.config is not None:
            load_pipeline_config(args.config, warn=_say)  # stdout holds the rows
        resolver = load_resolver(args.resolver, SystemClock(), not_found)
    except ConfigError as error:
        _say(f"invalid config: {error}")
        return EXIT_USAGE
    builder = RowBuilder(resolver, ColumnMode(args.column_mode))
    processor = Processor(ARTIFACT, loader_version())
    summary = Summary()
    with ExitStack() as stack:
        try:
            lines = _lines(stack, args.input)
            good = _open_out(stack, args.good, sys.stdout.buffer)
            bad = _open_out(stack, args.bad, sys.stderr.buffer)
        except OSError as error:
            _say(f"cannot open {error.filename}: {error.strerror}")
            return EXIT_USAGE
        try:
            _transform(builder, processor, lines, good, bad, summary)
        except RegistryUnavailable as error:
            _flush(good, bad)
            _say(f"Iglu registry unavailable at line {summary.lines + 1}: {error}")
            _say(summary.render())
            return EXIT_UNAVAILABLE
        _flush(good, bad)
    _say(summary.render())
    return EXIT_OK


def _transform(
    builder: RowBuilder,
    processor: Processor,
    lines: Iterable[bytes],
    good: IO[bytes],
    bad: IO[bytes],
    summary: Summary,
) -> None:
    """Write one output line per input line, ``_CHUNK_LINES`` lines at a time, counting them.

    Notes:
        A chunk's rows go out in one write per output; when the registry fails mid-chunk,
        the rows of the lines before it are written first (output stops at that line).
    """
    transform, types, bad_codes = builder.transform_line, summary.types, summary.bad
    # A row's types are one of a few frozensets the builder keeps (hash cached): adding a
    # combination once spares hashing every EntityType of every row.
    combinations: set[frozenset[EntityType]] = set()
    while chunk := list(islice(lines, _CHUNK_LINES)):
        rows: list[bytes] = []
        bad_rows: list[bytes] = []
        try:
            for raw in chunk:
                try:
                    result = transform(raw.decode("utf-8"))
                except UnicodeDecodeError:
                    result = _from_bytes(builder, raw)
                if type(result) is TransformedRow:
                    rows.append(result.to_json())
                    if result.types not in combinations:
                        combinations.add(result.types)
                        types.update(result.types)
                else:
                    bad_row: BadRow = result  # type: ignore[assignment]  # the one other outcome
                    bad_rows.append(bad_row.to_json(processor))
                    bad_codes[str(bad_row.code)] += 1
        finally:
            summary.lines += len(rows) + len(bad_rows)
            summary.good += len(rows)
            _write_lines(good, rows)
            _write_lines(bad, bad_rows)


def _from_bytes(builder: RowBuilder, raw: bytes) -> TransformedRow | BadRow:
    """Return the row or bad row of a line that is not UTF-8 (the parser's bad row)."""
    parsed = parse_bytes(raw)
    return builder.build(parsed) if isinstance(parsed, EnrichedEvent) else parsed


def _write_lines(stream: IO[bytes], lines: list[bytes]) -> None:
    if lines:
        lines.append(b"")  # the last line's end
        stream.write(b"\n".join(lines))


def _lines(stack: ExitStack, source: str) -> Iterator[bytes]:
    """Yield input lines as bytes without their ``\\n`` or ``\\r\\n`` ending.

    Notes:
        The file's own line iteration and ``map`` over bytes methods: no Python frame
        per line. ``rstrip`` removes the one LF a line can end with; one CR before it goes.
    """
    if source == "-":
        stream: IO[bytes] = sys.stdin.buffer
    else:
        stream = stack.enter_context(open(source, "rb", buffering=_READ_BUFFER))  # noqa: SIM115
    return map(bytes.removesuffix, map(bytes.rstrip, stream, repeat(b"\n")), repeat(b"\r"))


def _open_out(stack: ExitStack, path: Path | None, default: IO[bytes]) -> IO[bytes]:
    if path is None:
        return default
    return stack.enter_context(path.open("wb"))


def _flush(*streams: IO[bytes]) -> None:
    """Flush the outputs so that rows precede the summary when they share a terminal."""
    for stream in streams:
        stream.flush()


def _say(message: str) -> None:
    print(f"plowline-loader transform: {message}", file=sys.stderr, flush=True)
