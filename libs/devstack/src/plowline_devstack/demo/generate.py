"""``plowline dev generate``: a realistic stream of enriched TSV events, some malformed on purpose.

``generate`` yields :class:`GeneratedLine` values: good page views, link clicks and
custom checkouts (``traffic.py``), with ``bad_fraction`` of the lines malformed in one of
``malformed.MALFORMED_KINDS`` and, on request, ``never_fitting`` valid legacy orders that
the demo's hand-made column refuses (``demo/conflict.py``). ``publish`` sends lines to a Pub/Sub topic at a steady rate
with the official client. The command writes to a file, stdout, or the local stack's topic.

Notes:
    Deterministic: the same seed, count, fraction and start time give the same lines.
    The number of malformed lines is exactly ``round(count * bad_fraction)``, their kinds
    taken in turn so that each kind appears once there are enough of them. Asking for no
    never-fitting line draws nothing more: the lines are those of earlier versions.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from plowline_devstack.cli import Command
from plowline_devstack.demo.malformed import MALFORMED_KINDS, malformed_line
from plowline_devstack.demo.traffic import NEVER_FITTING_KINDS, Traffic, assemble

DEFAULT_BAD_FRACTION = 0.05
DEFAULT_TOPIC = "enriched"
ROW, BAD_ROW, DEAD_END = "row", "bad row", "dead end"
_PROGRESS_EVERY_S = 1.0


@dataclass(frozen=True, slots=True)
class GeneratedLine:
    """One generated enriched line: what it is, the event id it carries, its text."""

    kind: str
    event_id: str
    line: str

    @property
    def good(self) -> bool:
        """True when the loader must turn the line into a table row (not a bad row)."""
        return self.kind not in MALFORMED_KINDS

    @property
    def fate(self) -> str:
        """Where the line must end: ``ROW``, ``BAD_ROW`` or (never fitting) ``DEAD_END``."""
        if self.kind in MALFORMED_KINDS:
            return BAD_ROW
        return DEAD_END if self.kind in NEVER_FITTING_KINDS else ROW


def generate(
    count: int,
    *,
    start: datetime,
    seed: int | None = None,
    bad_fraction: float = DEFAULT_BAD_FRACTION,
    rate: float = 100.0,
    never_fitting: int = 0,
) -> Iterator[GeneratedLine]:
    """Return ``count`` lines whose collector times start at ``start``, ``rate`` events a second.

    Notes:
        Checks its arguments at once (ValueError), before the first line is drawn.
    """
    if not 0.0 <= bad_fraction <= 1.0:
        raise ValueError(f"bad_fraction must be within [0, 1], got {bad_fraction}")
    bad = round(count * bad_fraction)
    if not 0 <= never_fitting <= count - bad:
        raise ValueError(f"never_fitting must be within [0, {count - bad}], got {never_fitting}")
    return _lines(count, random.Random(seed), start, bad, rate, never_fitting)


def _lines(
    count: int, rng: random.Random, start: datetime, bad: int, rate: float, never_fitting: int
) -> Iterator[GeneratedLine]:
    traffic = Traffic(rng, start, rate)
    bad_at = set(rng.sample(range(count), bad))
    legacy_at: set[int] = set()
    if never_fitting:
        rest = [position for position in range(count) if position not in bad_at]
        legacy_at = set(rng.sample(rest, never_fitting))
    kinds = list(MALFORMED_KINDS)
    rng.shuffle(kinds)
    taken = 0
    for position in range(count):
        if position in bad_at:
            kind, event_id = kinds[taken % len(kinds)], traffic.uuid()
            taken += 1
            yield GeneratedLine(kind, event_id, malformed_line(traffic, kind, event_id))
        elif position in legacy_at:
            kind, event_id = NEVER_FITTING_KINDS[0], traffic.uuid()
            yield GeneratedLine(kind, event_id, assemble(traffic.fields(kind, event_id)))
        else:
            yield GeneratedLine(*traffic.next_event())


def publish(
    lines: Iterable[GeneratedLine],
    publisher: Any,
    topic_path: str,
    *,
    rate: float = 0.0,
    on_progress: Callable[[int], None] = lambda sent: None,
) -> int:
    """Publish each line to ``topic_path`` at ``rate`` a second (0: at once); return the count.

    Notes:
        Returns only once every publish future has resolved (each message has its id), so
        a returned count is what the topic holds.
    """
    began = time.monotonic()
    futures: list[Future[str]] = []
    last_report = began
    for sent, generated in enumerate(lines, start=1):
        futures.append(publisher.publish(topic_path, generated.line.encode()))
        if rate > 0:
            ahead = began + sent / rate - time.monotonic()
            if ahead > 0:
                time.sleep(ahead)
        if time.monotonic() - last_report >= _PROGRESS_EVERY_S:
            last_report = time.monotonic()
            on_progress(sum(1 for future in futures if future.done()))
    for future in futures:
        future.result(timeout=60)
    on_progress(len(futures))
    return len(futures)


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--count", type=int, default=1000, help="events to generate (default 1000)")
    parser.add_argument(
        "--rate", type=float, default=200.0, help="events a second when publishing (0: unpaced)"
    )
    parser.add_argument(
        "--bad-fraction",
        type=float,
        default=DEFAULT_BAD_FRACTION,
        help="share of malformed lines (default %(default)s)",
    )
    parser.add_argument(
        "--never-fitting",
        type=int,
        default=0,
        help="valid com.acme/legacy_order events to add, which `plowline demo`'s hand-made "
        "column refuses (default 0)",
    )
    parser.add_argument("--seed", type=int, help="random seed: same seed, same events")
    parser.add_argument(
        "--start",
        type=datetime.fromisoformat,
        help="first collector time, ISO 8601 (default now; fix it with --seed for identical output)",
    )
    parser.add_argument(
        "--to",
        default="-",
        help="'-' for stdout (default), a FILE, or 'topic' to publish to the local stack",
    )
    parser.add_argument(
        "--topic", default=DEFAULT_TOPIC, help="topic when --to topic (default %(default)s)"
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path(".plowline"),
        help="the local stack's data directory, for --to topic (default %(default)s)",
    )
    parser.add_argument(
        "--pubsub",
        metavar="HOST:PORT",
        help="for --to topic: a Pub/Sub emulator `plowline dev up` did not start, such as "
        "docker compose's 127.0.0.1:8085 (its topics are not checked here)",
    )
    parser.add_argument(
        "--project",
        default="plowline-local",
        help="the emulator's project, with --pubsub (default %(default)s)",
    )


def _run(args: argparse.Namespace) -> int:
    if args.count < 0:
        print("plowline dev generate: --count must not be negative", file=sys.stderr)
        return 2
    start = args.start or datetime.now(UTC)
    if start.tzinfo is None:
        start = start.replace(tzinfo=UTC)
    try:
        lines = generate(
            args.count,
            start=start,
            seed=args.seed,
            bad_fraction=args.bad_fraction,
            rate=args.rate or 100.0,
            never_fitting=args.never_fitting,
        )
    except ValueError as error:
        print(f"plowline dev generate: {error}", file=sys.stderr)
        return 2
    if args.to == "topic":
        return _to_topic(lines, args)
    if args.to == "-":
        _write(lines, sys.stdout)
    else:
        with Path(args.to).open("w", encoding="utf-8") as out:
            _write(lines, out)
        print(f"wrote {args.count} events to {args.to}", file=sys.stderr)
    return 0


def _write(lines: Iterable[GeneratedLine], out: TextIO) -> None:
    for generated in lines:
        out.write(generated.line)
        out.write("\n")


def _to_topic(lines: Iterable[GeneratedLine], args: argparse.Namespace) -> int:
    from plowline_cloud.clients import publisher_client

    from plowline_devstack.stack.lifecycle import read_state

    if args.pubsub:
        target, topic = args.pubsub, f"projects/{args.project}/topics/{args.topic}"
    else:
        stack = read_state(args.data_dir)
        if stack is None:
            print(
                f"plowline dev generate: no local stack in {args.data_dir}; run `plowline dev up`"
                " (or name a running emulator with --pubsub HOST:PORT)",
                file=sys.stderr,
            )
            return 1
        try:
            topic = stack.topic_path(args.topic)
        except KeyError as error:
            print(f"plowline dev generate: {error.args[0]}", file=sys.stderr)
            return 2
        target = stack.endpoints.pubsub_target
    publisher = publisher_client(target)
    began = time.monotonic()

    def progress(sent: int) -> None:
        print(f"\rpublished {sent}/{args.count}", end="", file=sys.stderr, flush=True)

    try:
        sent = publish(lines, publisher, topic, rate=args.rate, on_progress=progress)
    finally:
        publisher.stop()
    elapsed = time.monotonic() - began
    print(f"\rpublished {sent} events to {topic} in {elapsed:.1f} s", file=sys.stderr)
    return 0


COMMAND = Command(
    ("dev", "generate"),
    "generate realistic enriched events (some malformed) to a file, stdout or the local topic",
    _run,
    _configure,
    description="Generate Snowplow enriched TSV events: page views with web_page and "
    "ua_parser_context contexts, link clicks, a custom com.acme/checkout_started event, and "
    "--bad-fraction malformed lines (not TSV, wrong field count, bad timestamp, bad JSON, "
    "unknown schema). Write them to stdout, a file, or publish them to the local stack's topic.",
)
