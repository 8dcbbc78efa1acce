"""Benchmark what each named hostile line costs against a normal bad line, one core.

For every line of ``plowline_core.testing.hostile`` (and a normal bad line: the good event
with an unparseable ``collector_tstamp``) prints the median cost of:

  core    the transform command's work: bytes → row or bad row → its JSON
  loader  the loader's per-message work without I/O: ``BatchProcessor.prepare`` on a batch of
          one (transform, size limits, size_violation bad rows), over in-memory ports

and the ratio of each to the normal bad line's (goal: at most 10x, so that one sender cannot
slow a partition down). Lines over 64 KiB also show the ratio per byte, since reading a
10 MB message costs what its size costs whatever is in it.

Run: ``uv run python bench/hostile.py [--repeat 5] [--mode full|major] [--only NAME ...]``
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
from plowline_core.badrows import Processor
from plowline_core.event.model import EnrichedEvent
from plowline_core.event.parser import parse_bytes
from plowline_core.iglu.config import EmbeddedConnection, RepositoryRef
from plowline_core.iglu.key import SchemaKey
from plowline_core.iglu.resolver import Resolver
from plowline_core.schema.entity import ColumnMode
from plowline_core.testing.clock import FixedClock
from plowline_core.testing.hostile import HostileLine, good_fields, hostile_lines
from plowline_core.testing.registry import InMemoryRegistry
from plowline_core.testing.sinks import InMemoryPublisher, InMemoryRowSink
from plowline_core.testing.table import InMemoryTableSchemaStore
from plowline_core.transform.row import RowBuilder, TransformedRow
from plowline_loader.batch.announcements import TypeTracker
from plowline_loader.batch.message import InboundMessage
from plowline_loader.batch.processor import BatchProcessor, Destinations

DEFAULT_IGLU = Path(__file__).resolve().parents[1] / "tests" / "data" / "iglu-central"
PROCESSOR = Processor("plowline-bench", "0.1.0")
GOAL = 10.0
_PER_BYTE_FROM = 64 * 1024


def build_builder(iglu_central: Path, mode: ColumnMode) -> RowBuilder:
    """Return a row builder over Iglu Central held in memory."""
    root = iglu_central / "schemas"
    schemas: dict[SchemaKey, Any] = {}
    for path in root.glob("*/*/*/*"):
        vendor, name, fmt, version = path.relative_to(root).parts
        schemas[SchemaKey.parse(f"iglu:{vendor}/{name}/{fmt}/{version}")] = orjson.loads(
            path.read_bytes()
        )
    registry = InMemoryRegistry("Iglu Central", schemas)
    ref = RepositoryRef(registry.name, 0, (), EmbeddedConnection("iglu-central"))
    clock = FixedClock(datetime(2024, 5, 1, tzinfo=UTC))
    return RowBuilder(Resolver([(ref, registry)], clock), mode)


def build_processor(builder: RowBuilder, mode: ColumnMode) -> BatchProcessor:
    """Return the loader's batch processor over in-memory ports (nothing is written)."""
    table = InMemoryTableSchemaStore()
    destinations = Destinations(
        table,
        InMemoryRowSink(table),
        InMemoryPublisher(),
        InMemoryPublisher(),
        InMemoryPublisher(),
    )
    clock = FixedClock(datetime(2024, 5, 1, tzinfo=UTC))
    return BatchProcessor(builder, destinations, TypeTracker(mode), clock, PROCESSOR)


def core_cost(builder: RowBuilder) -> Callable[[bytes], object]:
    """Return the transform command's work on one message."""

    def run(data: bytes) -> object:
        try:
            result = builder.transform_line(data.decode("utf-8"))
        except UnicodeDecodeError:
            parsed = parse_bytes(data)
            result = builder.build(parsed) if isinstance(parsed, EnrichedEvent) else parsed
        if isinstance(result, TransformedRow):
            return result.to_json()
        return result.to_json(PROCESSOR)

    return run


def loader_cost(processor: BatchProcessor) -> Callable[[bytes], object]:
    """Return the loader's per-message work (``prepare`` of a batch of one)."""

    def run(data: bytes) -> object:
        return processor.prepare([InboundMessage(data, "bench")])

    return run


def median_seconds(work: Callable[[bytes], object], data: bytes, repeat: int) -> float:
    """Return the median seconds of one call, each timing long enough to be read (~20 ms)."""
    work(data)  # warm: schemas resolved, casters compiled, line shapes decoded
    start = time.perf_counter()
    work(data)
    once = max(time.perf_counter() - start, 1e-7)
    number = max(1, int(0.02 / once))
    timings = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            work(data)
        timings.append((time.perf_counter() - start) / number)
    return statistics.median(timings)


def normal_bad_line() -> HostileLine:
    """Return the reference: the good event with an unparseable collector_tstamp."""
    fields = good_fields()
    fields["collector_tstamp"] = "yesterday"
    data = "\t".join(fields.values()).encode()
    return HostileLine("NORMAL bad line", data, "parsing.row_decoding", "reference")


def main() -> None:
    """Print the cost of each hostile line against the normal bad line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="timed runs; median shown (5)")
    parser.add_argument("--mode", choices=["full", "major"], default="full", help="column mode")
    parser.add_argument("--iglu-central", type=Path, default=DEFAULT_IGLU, help="Iglu Central")
    parser.add_argument("--only", nargs="*", metavar="NAME", help="only these hostile lines")
    args = parser.parse_args()
    mode = ColumnMode(args.mode)
    builder = build_builder(args.iglu_central, mode)
    core, loader = core_cost(builder), loader_cost(build_processor(builder, mode))
    lines = [line for line in hostile_lines() if not args.only or line.name in args.only]
    normal = normal_bad_line()
    base_core = median_seconds(core, normal.data, args.repeat)
    base_loader = median_seconds(loader, normal.data, args.repeat)
    print(
        f"column mode {mode.value}; medians of {args.repeat} runs; ratio = line / normal bad line"
    )
    print(
        f"{'line':28} {'bytes':>9} {'core µs':>9} {'x':>6} {'loader µs':>10} {'x':>6}  per-byte x"
    )
    print(
        f"{normal.name:28} {len(normal.data):9} {base_core * 1e6:9.1f} {1:6.1f} "
        f"{base_loader * 1e6:10.1f} {1:6.1f}"
    )
    worst = ("", 0.0)
    for line in lines:
        seconds_core = median_seconds(core, line.data, args.repeat)
        seconds_loader = median_seconds(loader, line.data, args.repeat)
        ratio = seconds_loader / base_loader
        per_byte = ""
        if len(line.data) > _PER_BYTE_FROM:
            scaled = ratio * len(normal.data) / len(line.data)
            per_byte = f"{scaled:.2f}"
            ratio = scaled
        if ratio > worst[1]:
            worst = (line.name, ratio)
        flag = "  OVER GOAL" if ratio > GOAL else ""
        print(
            f"{line.name:28} {len(line.data):9} {seconds_core * 1e6:9.1f} "
            f"{seconds_core / base_core:6.1f} {seconds_loader * 1e6:10.1f} "
            f"{seconds_loader / base_loader:6.1f}  {per_byte}{flag}"
        )
    print(
        f"worst (loader, per byte for lines over 64 KiB): {worst[0]} at {worst[1]:.1f}x "
        f"(goal <= {GOAL:.0f}x)"
    )


if __name__ == "__main__":
    main()
