"""Benchmark the loader transform: enriched TSV line → BigQuery-JSON row bytes, one core.

Builds a deterministic (seeded) mix of enriched lines — 0-5 contexts from real Iglu Central
schemas, some unstruct events, ~10% bad lines of several kinds — then prints single-core
events/s, median of ``--repeat`` runs, for:

  (a) the full transform: parse + resolve (cached) + cast + ``to_json`` of the row, or of the
      bad row for bad lines;
  (b) the floor: ``line.split("\\t")`` + ``json.loads`` of the three JSON fields;
  (c) the ratio (a)/(b).

Also printed, for locating time: parse alone, and build + to_json alone on parsed events.

With ``--cli``, also (d) ``plowline-loader transform`` on the same lines, run in this process
through the command's ``main`` (input file → ``--good``/``--bad`` files, a resolver config
over the same Iglu Central directory, a fresh resolver each run; interpreter start left
out), and (e) its ratio to (a), timed interleaved with the others (goal >= 0.8). Each run of
(d) writes new output files, as a user's run does (removing the previous run's files is
timed too); (d') is the same command writing over the files of its previous run: on ext4
(``auto_da_alloc``) a file truncated and rewritten is flushed when closed, a cost of the
file system that (d') shows apart.

With ``--compare-modes``, also (f) the full transform in the other column mode (``major``:
Loader 2.x's columns, or ``full``), timed interleaved with the rest, and (g) the ratio
major/full (goal >= 0.9: 2.x's columns cost at most a tenth more).

Run: ``uv run python bench/transform.py [--lines 20000] [--repeat 5] [--profile] [--cli]
[--compare-modes]``
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import cProfile
import io
import itertools
import json
import os
import pstats
import random
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
from plowline_core.badrows import Processor
from plowline_core.event.atomic import NATIVE as LINE_DECODER_IN_C
from plowline_core.event.model import EnrichedEvent
from plowline_core.event.parser import parse
from plowline_core.iglu.config import EmbeddedConnection, RepositoryRef
from plowline_core.iglu.key import SchemaKey
from plowline_core.iglu.resolver import Resolver
from plowline_core.schema.entity import ColumnMode
from plowline_core.testing.clock import FixedClock
from plowline_core.testing.registry import InMemoryRegistry
from plowline_core.testing.tsv import enriched_line
from plowline_core.transform.codegen import NATIVE as RECORD_CASTER_IN_C
from plowline_core.transform.row import RowBuilder, TransformedRow

DEFAULT_IGLU = Path(__file__).resolve().parents[1] / "tests" / "data" / "iglu-central"
CONTEXTS_URI = "iglu:com.snowplowanalytics.snowplow/contexts/jsonschema/1-0-0"
UNSTRUCT_URI = "iglu:com.snowplowanalytics.snowplow/unstruct_event/jsonschema/1-0-0"
UNKNOWN_URI = "iglu:com.acme/not_published/jsonschema/1-0-0"

Maker = Callable[[random.Random], dict[str, Any]]


def _web_page(rng: random.Random) -> dict[str, Any]:
    return {"id": str(uuid.UUID(int=rng.getrandbits(128)))}


def _ua_parser(rng: random.Random) -> dict[str, Any]:
    family = rng.choice(["Chrome", "Firefox", "Safari", "IE"])
    major = str(rng.randint(7, 120))
    return {
        "useragentFamily": family,
        "useragentMajor": major,
        "useragentMinor": "0",
        "useragentPatch": None,
        "useragentVersion": f"{family} {major}.0",
        "osFamily": rng.choice(["Windows", "Mac OS X", "Linux", "Android"]),
        "osMajor": None,
        "osMinor": None,
        "osPatch": None,
        "osPatchMinor": None,
        "osVersion": "10",
        "deviceFamily": "Other",
    }


def _client_session(rng: random.Random) -> dict[str, Any]:
    return {
        "userId": str(uuid.UUID(int=rng.getrandbits(128))),
        "sessionId": str(uuid.UUID(int=rng.getrandbits(128))),
        "sessionIndex": rng.randint(1, 400),
        "previousSessionId": None,
        "storageMechanism": "LOCAL_STORAGE",
        "firstEventId": str(uuid.UUID(int=rng.getrandbits(128))),
    }


def _geolocation(rng: random.Random) -> dict[str, Any]:
    return {
        "latitude": round(rng.uniform(-90, 90), 6),
        "longitude": round(rng.uniform(-180, 180), 6),
        "latitudeLongitudeAccuracy": 12.5,
        "altitude": None,
        "speed": rng.choice([None, 1.5]),
        "timestamp": 1_700_000_000_000 + rng.randint(0, 10**9),
    }


def _performance_timing(rng: random.Random) -> dict[str, Any]:
    start = 1_415_358_089_861 + rng.randint(0, 10**6)
    names = ["navigationStart", "fetchStart", "domainLookupStart", "connectStart", "requestStart"]
    names += ["responseStart", "responseEnd", "domLoading", "domInteractive", "domComplete"]
    return {name: start + 7 * i for i, name in enumerate(names)}


def _spiders(rng: random.Random) -> dict[str, Any]:
    return {
        "spiderOrRobot": False,
        "category": "BROWSER",
        "reason": "PASSED_ALL",
        "primaryImpact": "NONE",
    }


def _link_click(rng: random.Random) -> dict[str, Any]:
    return {
        "targetUrl": f"https://example.com/p/{rng.randint(1, 10**6)}",
        "elementId": "cta",
        "elementClasses": ["btn", "btn-primary"],
        "elementTarget": "_blank",
    }


def _change_form(rng: random.Random) -> dict[str, Any]:
    return {
        "formId": "signup",
        "elementId": "email",
        "nodeName": "INPUT",
        "type": "email",
        "value": f"user{rng.randint(1, 10**6)}@example.com",
        "elementClasses": ["input"],
    }


def _timing(rng: random.Random) -> dict[str, Any]:
    return {"category": "load", "variable": "map", "timing": rng.randint(1, 5000), "label": "x"}


CONTEXTS: list[tuple[str, Maker]] = [
    ("iglu:com.snowplowanalytics.snowplow/web_page/jsonschema/1-0-0", _web_page),
    ("iglu:com.snowplowanalytics.snowplow/ua_parser_context/jsonschema/1-0-0", _ua_parser),
    ("iglu:com.snowplowanalytics.snowplow/client_session/jsonschema/1-0-1", _client_session),
    ("iglu:com.snowplowanalytics.snowplow/geolocation_context/jsonschema/1-1-0", _geolocation),
    ("iglu:org.w3/PerformanceTiming/jsonschema/1-0-0", _performance_timing),
    ("iglu:com.iab.snowplow/spiders_and_robots/jsonschema/1-0-0", _spiders),
]
UNSTRUCTS: list[tuple[str, Maker]] = [
    ("iglu:com.snowplowanalytics.snowplow/link_click/jsonschema/1-0-1", _link_click),
    ("iglu:com.snowplowanalytics.snowplow/change_form/jsonschema/1-0-0", _change_form),
    ("iglu:com.snowplowanalytics.snowplow/timing/jsonschema/1-0-0", _timing),
]


def _envelope(uri: str, data: Any) -> str:
    return orjson.dumps({"schema": uri, "data": data}).decode()


def _good_fields(rng: random.Random) -> dict[str, str]:
    moment = datetime(2024, 1, 1, tzinfo=UTC) + timedelta(milliseconds=rng.randint(0, 10**10))
    stamp = moment.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    fields = {
        "event_id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        "collector_tstamp": stamp,
        "etl_tstamp": stamp,
        "dvce_created_tstamp": stamp,
        "domain_userid": uuid.UUID(int=rng.getrandbits(128)).hex[:16],
        "domain_sessionidx": str(rng.randint(1, 500)),
        "page_url": f"https://www.example.com/articles/{rng.randint(1, 10**5)}",
        "geo_latitude": f"{rng.uniform(-90, 90):.4f}",
        "br_features_pdf": rng.choice(["0", "1"]),
    }
    chosen = rng.sample(CONTEXTS, rng.randint(0, 5))
    if chosen:
        items = [{"schema": uri, "data": make(rng)} for uri, make in chosen]
        fields["contexts"] = _envelope(CONTEXTS_URI, items)
    if rng.random() < 0.3:
        uri, make = rng.choice(UNSTRUCTS)
        fields["event"] = "unstruct"
        fields["unstruct_event"] = _envelope(UNSTRUCT_URI, {"schema": uri, "data": make(rng)})
    if rng.random() < 0.5:
        derived = [{"schema": CONTEXTS[1][0], "data": _ua_parser(rng)}]
        fields["derived_contexts"] = _envelope(CONTEXTS_URI, derived)
    return fields


def _bad_line(rng: random.Random) -> str:
    kind = rng.randrange(6)
    fields = _good_fields(rng)
    if kind == 0:
        return "this is not an enriched event"
    if kind == 1:
        return enriched_line(**fields) + "\textra"
    if kind == 2:
        fields["collector_tstamp"] = "yesterday"
        fields["txn_id"] = "many"
        return enriched_line(**fields)
    if kind == 3:
        unknown = [{"schema": UNKNOWN_URI, "data": {"a": 1}}]
        fields["contexts"] = _envelope(CONTEXTS_URI, unknown)
        return enriched_line(**fields)
    if kind == 4:
        session = _client_session(rng)
        session["sessionIndex"] = "seven"
        del session["userId"]
        fields["contexts"] = _envelope(CONTEXTS_URI, [{"schema": CONTEXTS[2][0], "data": session}])
        return enriched_line(**fields)
    fields["unstruct_event"] = '{"schema": "iglu:broken'
    return enriched_line(**fields)


def build_lines(count: int, seed: int) -> list[str]:
    """Return ``count`` enriched lines, about 10% of them bad, the same for the same seed."""
    rng = random.Random(seed)
    return [
        _bad_line(rng) if rng.random() < 0.1 else enriched_line(**_good_fields(rng))
        for _ in range(count)
    ]


def build_resolver(iglu_central: Path) -> Resolver:
    """Return a resolver over an in-memory registry preloaded from Iglu Central."""
    registry = InMemoryRegistry("Iglu Central (in memory)")
    for uri, _ in CONTEXTS + UNSTRUCTS:
        key = SchemaKey.parse(uri)
        registry.add(key, orjson.loads((iglu_central / "schemas" / key.to_path()).read_bytes()))
    ref = RepositoryRef(registry.name, 0, (), EmbeddedConnection(str(iglu_central)))
    return Resolver([(ref, registry)], FixedClock(datetime(2024, 1, 1, tzinfo=UTC)))


def run_transform(builder: RowBuilder, processor: Processor, lines: list[str]) -> int:
    """Transform every line to row or bad-row bytes; return the number of bytes made."""
    size = 0
    transform = builder.transform_line
    for line in lines:
        result = transform(line)
        if isinstance(result, TransformedRow):
            size += len(result.to_json())
        else:
            size += len(result.to_json(processor))
    return size


def run_floor(lines: list[str]) -> int:
    """Split each line and json.loads its three JSON fields (the cost no transform avoids)."""
    parsed = 0
    loads = json.loads
    for line in lines:
        fields = line.split("\t")
        if len(fields) != 131:
            continue
        for index in (52, 58, 122):
            text = fields[index]
            if text:
                try:
                    loads(text)
                    parsed += 1
                except ValueError:
                    pass
    return parsed


def run_parse(lines: list[str]) -> int:
    """Parse every line only."""
    return sum(1 for line in lines if type(parse(line)) is EnrichedEvent)


def run_build(builder: RowBuilder, events: list[EnrichedEvent], processor: Processor) -> int:
    """Build and serialise rows of already-parsed events."""
    size = 0
    for event in events:
        result = builder.build(event)
        if isinstance(result, TransformedRow):
            size += len(result.to_json())
        else:
            size += len(result.to_json(processor))
    return size


def cli_workload(
    lines: list[str], iglu_central: Path, column_mode: str, overwrite: bool = False
) -> Callable[[], object]:
    """Return a run of ``plowline-loader transform`` over ``lines`` (files in a temp dir).

    Each run writes new ``--good``/``--bad`` files and first removes the previous run's;
    with ``overwrite``, every run writes over the same two files instead.
    """
    from plowline_loader.cli import main as loader_main

    root = Path(tempfile.mkdtemp(prefix="plowline-bench-transform-"))
    atexit.register(shutil.rmtree, root, True)  # ~100 MB of input and rows a workload
    source = root / "lines.tsv"
    source.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    resolver = root / "resolver.json"
    repository = {
        "name": "Iglu Central",
        "priority": 0,
        "vendorPrefixes": [],
        "connection": {"embedded": {"path": str(iglu_central)}},
    }
    resolver.write_text(
        json.dumps(
            {
                "schema": "iglu:com.snowplowanalytics.iglu/resolver-config/jsonschema/1-0-3",
                "data": {"cacheSize": 500, "cacheTtl": 600, "repositories": [repository]},
            }
        )
    )
    runs = itertools.count()

    def work() -> int:
        run = 0 if overwrite else next(runs)
        good, bad = root / f"good-{run}.jsonl", root / f"bad-{run}.jsonl"
        for previous in root.glob("*.jsonl"):
            if previous not in (good, bad):
                previous.unlink()
        argv = [
            "transform", "--resolver", str(resolver), "--column-mode", column_mode,
            "--good", str(good), "--bad", str(bad), str(source),
        ]  # fmt: skip
        with contextlib.redirect_stderr(io.TextIOWrapper(io.BytesIO())):  # the summary
            return loader_main(argv)

    return work


def median_rates(
    works: dict[str, tuple[Callable[[], object], int]],
    repeat: int,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, float]:
    """Return each workload's median events/s; workloads are interleaved within each repeat.

    Notes:
        Interleaving exposes every workload to the same background load (the machine is
        shared), so the ratio (a)/(b) is steadier than the absolute figures.
    """
    rates: dict[str, list[float]] = {name: [] for name in works}
    for work, _ in works.values():
        work()  # warm-up: caches, compiled casters, resolver
    for _ in range(repeat):
        for name, (work, count) in works.items():
            start = clock()
            work()
            rates[name].append(count / (clock() - start))
    return {name: statistics.median(values) for name, values in rates.items()}


def main() -> None:
    """Print the benchmark figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=20_000, help="lines in the mix (20000)")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs; median shown (5)")
    parser.add_argument("--seed", type=int, default=7, help="random seed of the mix (7)")
    parser.add_argument("--iglu-central", type=Path, default=DEFAULT_IGLU, help="Iglu Central")
    parser.add_argument("--column-mode", choices=["full", "major"], default="full")
    parser.add_argument("--profile", action="store_true", help="print a cProfile of (a)")
    parser.add_argument(
        "--cpu-time",
        action="store_true",
        help="time with this process's CPU time instead of the wall clock (a shared machine)",
    )
    parser.add_argument(
        "--cli", action="store_true", help="also time `plowline-loader transform` on the lines"
    )
    parser.add_argument(
        "--by-outcome", action="store_true", help="also print (a)'s cost per line of each outcome"
    )
    parser.add_argument(
        "--compare-modes",
        action="store_true",
        help="also time (a) in the other column mode, interleaved, and print the ratio "
        "major/full (2.x's columns; goal >= 0.9)",
    )
    args = parser.parse_args()

    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})  # one core
    lines = build_lines(args.lines, args.seed)
    builder = RowBuilder(build_resolver(args.iglu_central), ColumnMode(args.column_mode))
    processor = Processor("plowline-loader-bench", "0.0.0")
    outcomes = Counter(
        "good" if type(r) is TransformedRow else str(r.code)  # type: ignore[union-attr]
        for r in map(builder.transform_line, lines)
    )
    events = [e for e in map(parse, lines) if type(e) is EnrichedEvent]

    if args.profile:
        profiler = cProfile.Profile()
        profiler.runcall(run_transform, builder, processor, lines)
        pstats.Stats(profiler, stream=sys.stdout).sort_stats("tottime").print_stats(25)

    works: dict[str, tuple[Callable[[], object], int]] = {
        "full": (lambda: run_transform(builder, processor, lines), len(lines)),
        "floor": (lambda: run_floor(lines), len(lines)),
        "parse": (lambda: run_parse(lines), len(lines)),
        "build": (lambda: run_build(builder, events, processor), len(events)),
    }
    if args.compare_modes:
        other = "major" if args.column_mode == "full" else "full"
        other_builder = RowBuilder(build_resolver(args.iglu_central), ColumnMode(other))
        works["other-mode"] = (
            lambda: run_transform(other_builder, processor, lines),
            len(lines),
        )
    if args.cli:
        works["cli"] = (cli_workload(lines, args.iglu_central, args.column_mode), len(lines))
        works["cli-overwrite"] = (
            cli_workload(lines, args.iglu_central, args.column_mode, overwrite=True),
            len(lines),
        )
    rates = median_rates(
        works, args.repeat, time.process_time if args.cpu_time else time.perf_counter
    )
    full, floor, parse_only, build_only = (rates[k] for k in ("full", "floor", "parse", "build"))

    print(f"plowline transform benchmark: {len(lines)} lines, seed {args.seed}, ", end="")
    clock = "CPU time" if args.cpu_time else "wall time"
    print(f"column mode {args.column_mode}, median of {args.repeat}, one core, {clock}")
    print("  mix: " + ", ".join(f"{k}={v}" for k, v in sorted(outcomes.items())))
    built = {True: "C", False: "pure Python (its C extension is not built)"}
    print(f"  line decoder: {built[LINE_DECODER_IN_C]}, RECORD caster: {built[RECORD_CASTER_IN_C]}")
    print(f"  (a) transform line -> row bytes  {full:>10,.0f} events/s")
    print(f"  (b) floor split + json.loads     {floor:>10,.0f} events/s")
    print(f"  (c) ratio (a)/(b)                {full / floor:>10.2f}")
    print(f"      parse only                   {parse_only:>10,.0f} events/s")
    print(f"      build + to_json only         {build_only:>10,.0f} events/s (parsed events)")
    if args.cli:
        print(
            f"  (d) plowline-loader transform    {rates['cli']:>10,.0f} events/s (files, in process)"
        )
        print(f"  (e) ratio (d)/(a)                {rates['cli'] / full:>10.2f}")
        overwrite = rates["cli-overwrite"]
        print(
            f"  (d') the same, over its last files {overwrite:>8,.0f} events/s (ratio {overwrite / full:.2f})"
        )
    if args.compare_modes:
        rate = {args.column_mode: full, other: rates["other-mode"]}
        print(f"  (f) (a) in column mode {other:<5}     {rates['other-mode']:>10,.0f} events/s")
        print(
            f"  (g) ratio major/full             {rate['major'] / rate['full']:>10.2f} (goal >= 0.9)"
        )
    if args.by_outcome:
        print_outcome_costs(builder, processor, lines, args.repeat)


def print_outcome_costs(
    builder: RowBuilder, processor: Processor, lines: list[str], repeat: int
) -> None:
    """Print (a)'s median µs per line and share of the total time, per outcome (diagnostic)."""
    groups: dict[str, list[str]] = {}
    for line in lines:
        result = builder.transform_line(line)
        outcome = "good" if type(result) is TransformedRow else str(result.code)  # type: ignore[union-attr]
        groups.setdefault(outcome, []).append(line)
    costs = {
        outcome: median_rates(
            {outcome: (lambda group=group: run_transform(builder, processor, group), len(group))},
            repeat,
        )[outcome]
        for outcome, group in groups.items()
    }
    total = sum(len(groups[outcome]) / rate for outcome, rate in costs.items())
    for outcome, rate in sorted(costs.items()):
        share = len(groups[outcome]) / rate / total
        print(f"      {outcome:<30} {1e6 / rate:>7.1f} us/line {share:>6.1%} of the time")


if __name__ == "__main__":
    main()
