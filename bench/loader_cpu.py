"""Where the loader's CPU goes: per event at steady state, per process kind, idle and start-up.

Run: ``uv run python bench/loader_cpu.py [--events 30000] [--warmup 5000] [--rounds 3]
[--idle-seconds 10] [--max-messages N[,N...]] [--max-bytes N] [--profile DIR]
[--baseline-python PYTHON]``

The loader runs as a user runs it: ``plowline-loader run`` as a process (Spark local[*],
STREAMING_INSERTS) against the local stack this script starts. Each round, with a fresh
table and subscription:

1. Start-up: ``--warmup`` events are published, then the loader is started. Printed: wall
   time from the process start to the first row in the table, and the CPU the loader's
   process tree spent by then (JVM, Python workers, planning; ~1 chunk of events).
2. Steady state: once the warm-up is loaded, the loader is frozen (SIGSTOP to its process
   group) while ``--events`` events are published, then resumed: a backlog, drained with
   the machinery warm. Printed: CPU-µs per event of the whole tree and per process kind
   (driver Python, JVM, Python workers; see ``process_cpu``), from /proc, exited
   processes included. Also printed: the local stack's servers' CPU per event over the
   same drain and how busy each was; a server near 100% bounds the drain rate, and the
   loader's fixed costs (the JVM's ~0.02 cores) then weigh more per event than they do
   against Google's servers.
3. Idle: CPU per second (cores) over ``--idle-seconds`` after the drain.
4. The bare transform of the same lines in this process (parse, resolve, cast, row or bad
   row bytes; one thread's CPU), and its share of the loader's CPU per event.

The lines are bench/transform.py's mix (0-5 contexts from Iglu Central, some unstruct
events, ~10% bad lines); the table has their columns. Figures are medians over
``--rounds``. ``--profile DIR`` adds one unmeasured round with py-spy over every Python
process and a JFR recording of the JVM during the drain, and prints their top frames.
``--baseline-python`` (another checkout's ``.venv/bin/python``, e.g. main's) also runs
that checkout's loader, alternating rounds with this one's, and prints both medians and
their ratios: before/after figures from one run, under the same machine load.
``--max-messages 10000,20000`` likewise alternates the loader's micro-batch budgets
(messages per partition) in every round and prints each one's medians.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from google.cloud import bigquery
from plowline_cloud.clients import bigquery_client, publisher_client, subscriber_client
from plowline_cloud.clock import SystemClock
from plowline_cloud.table_schema import BigQueryTableSchemaStore
from plowline_core.badrows import Processor
from plowline_core.event.fields import ATOMIC_COLUMNS
from plowline_core.iglu.key import SchemaKey
from plowline_core.schema.columns import column_field
from plowline_core.schema.entity import ColumnMode, ShredProperty
from plowline_core.transform.row import RowBuilder
from plowline_devstack.stack.lifecycle import LocalStack, start_stack
from plowline_devstack.stack.provisioning import StackConfig
from plowline_devstack.stack.servers import free_port
from plowline_loader.bootstrap import WorkerConfig, build_resolver

sys.path.insert(0, str(Path(__file__).parent))
from process_cpu import KINDS, Snapshot, TreeCpu, adopt_orphans, cpu_seconds
from profiles import Profilers
from transform import CONTEXTS, DEFAULT_IGLU, UNSTRUCTS, build_lines, run_transform


@dataclass(frozen=True)
class Round:
    """One round's figures."""

    first_row_s: float
    startup_cpu_s: float
    drain_s: float
    per_event_us: dict[str, float]  # by kind, and "total"
    idle_cores: float
    transform_us: float
    stack_us: dict[str, float]  # the local stack's servers' CPU per event during the drain


INSERT_ALL = {"mode": "STREAMING_INSERTS", "retry": False}
"""The config's ``load`` of these rounds unless told otherwise (``write_mode_cost`` is)."""


def _rig(
    stack: LocalStack, root: Path, load: dict[str, Any] = INSERT_ALL
) -> tuple[Path, Path, str, str]:
    """Create a table with the mix's columns, a topic and a subscription; write the configs."""
    name = uuid.uuid4().hex[:10]
    client = bigquery_client(stack.project, stack.endpoints.bigquery_url)
    atomic = [bigquery.SchemaField.from_api_repr(column.to_api()) for column in ATOMIC_COLUMNS]
    table_ref = f"{stack.project}.{stack.dataset}.events_{name}"
    client.create_table(bigquery.Table(table_ref, schema=atomic))
    store = BigQueryTableSchemaStore(client, table_ref, 60.0, SystemClock())
    shreds = [(u, ShredProperty.CONTEXTS) for u, _ in CONTEXTS]
    shreds += [(u, ShredProperty.UNSTRUCT_EVENT) for u, _ in UNSTRUCTS]
    fields = []
    for uri, shred in shreds:
        key = SchemaKey.parse(uri)
        schema = json.loads((DEFAULT_IGLU / "schemas" / key.to_path()).read_text())
        fields.append(column_field(key, schema, shred))
    store.add_fields(fields)
    project = f"projects/{stack.project}"
    topic = f"{project}/topics/in-{name}"
    publisher_client(stack.endpoints.pubsub_target).create_topic(request={"name": topic})
    subscriber_client(stack.endpoints.pubsub_target).create_subscription(
        request={"name": f"{project}/subscriptions/in-{name}", "topic": topic}
    )
    config = {
        "schema": "iglu:com.snowplowanalytics.snowplow.storage/bigquery_config/jsonschema/1-0-0",
        "data": {
            "name": "cpu bench", "id": "31b1559d-d319-4023-aaae-97698238d808",
            "projectId": stack.project, "datasetId": stack.dataset, "tableId": f"events_{name}",
            "input": f"in-{name}", "typesTopic": "types", "typesSubscription": "types-mutator",
            "badRows": "bad-rows", "failedInserts": "failed-inserts",
            "load": load, "purpose": "ENRICHED_EVENTS",
        },
    }  # fmt: skip
    resolver = {
        "schema": "iglu:com.snowplowanalytics.iglu/resolver-config/jsonschema/1-0-3",
        "data": {"cacheSize": 500, "cacheTtl": 600, "repositories": [{
            "name": "Iglu Central", "priority": 0, "vendorPrefixes": [],
            "connection": {"embedded": {"path": str(DEFAULT_IGLU)}},
        }]},
    }  # fmt: skip
    root.mkdir(parents=True)
    config_file, resolver_file = root / "config.json", root / "resolver.json"
    config_file.write_text(json.dumps(config))
    resolver_file.write_text(json.dumps(resolver))
    return config_file, resolver_file, table_ref, topic


def _publish(stack: LocalStack, topic: str, lines: list[str]) -> None:
    publisher = publisher_client(stack.endpoints.pubsub_target)
    for future in [publisher.publish(topic, line.encode()) for line in lines]:
        future.result(timeout=120)


def _count(stack: LocalStack, table_ref: str) -> int:
    client = bigquery_client(stack.project, stack.endpoints.bigquery_url)
    row = next(iter(client.query(f"SELECT COUNT(*) AS n FROM `{table_ref}`").result()))
    return int(row["n"])


def _events_in(log: Path) -> int:
    """Return the events the loader's batches took in so far, from its log.

    Notes:
        From the log rather than ``/metrics``: polling its HTTP server costs the driver CPU.
    """
    return sum(int(n) for n in _BATCH_EVENTS.findall(log.read_text(errors="replace")))


_BATCH_EVENTS = re.compile(r"batch loaded .*? events=(\d+)")


class _BatchJvm:
    """The JVM's CPU per micro-batch of the drain: sampled when the log shows a batch done."""

    def __init__(self, log: Path, snapshot: Any, before: Snapshot) -> None:
        self._log, self._snapshot = log, snapshot
        self._skip = len(self._batches())  # the warm-up's
        self._jvm = [before.by_kind["jvm"]]
        self._events: list[int] = []

    def _batches(self) -> list[int]:
        return [int(n) for n in _BATCH_EVENTS.findall(self._log.read_text(errors="replace"))]

    def events_in(self) -> int:
        """Return the events loaded so far (warm-up included); note the JVM's CPU at a new batch."""
        batches = self._batches()
        drained = batches[self._skip :]
        if len(drained) > len(self._events):
            self._jvm.append(self._snapshot().by_kind["jvm"])
            self._events = drained
        return sum(batches)

    def print(self) -> None:
        """Print each drained batch's events and the JVM's CPU-s up to its end."""
        spent = [f"{b - a:.2f}" for a, b in zip(self._jvm, self._jvm[1:], strict=False)]
        print(f"    drain batches: events {self._events}; JVM CPU-s {spent}", flush=True)


def _wait(process: subprocess.Popen[bytes], log: Path, done: Any, timeout_s: float) -> float:
    """Poll ``done()`` every 0.2 s; return when it held; exit if the loader died."""
    deadline = time.monotonic() + timeout_s
    while not done():
        if process.poll() is not None:
            raise SystemExit(f"the loader exited ({process.returncode}); see {log}")
        if time.monotonic() > deadline:
            raise SystemExit(f"the loader did not get there in {timeout_s:.0f} s; see {log}")
        time.sleep(0.2)
    return time.monotonic()


def _transform_us(config: WorkerConfig, lines: list[str]) -> float:
    """Return this thread's CPU-µs per line for the bare transform (warm caches)."""
    builder = RowBuilder(build_resolver(config), ColumnMode.FULL)
    processor = Processor("plowline-loader-bench", "0.0.0")
    run_transform(builder, processor, lines[:2000])  # warm: resolver cache, casters
    started = time.thread_time()
    run_transform(builder, processor, lines)
    return (time.thread_time() - started) * 1e6 / len(lines)


def _round(
    stack: LocalStack,
    root: Path,
    args: argparse.Namespace,
    seed: int,
    python: str = sys.executable,
    load: dict[str, Any] = INSERT_ALL,
    loader_env: dict[str, str] | None = None,
) -> Round:
    config_file, resolver_file, table_ref, topic = _rig(stack, root, load)
    warmup, backlog = build_lines(args.warmup, seed), build_lines(args.events, seed + 1)
    _publish(stack, topic, warmup)
    port = free_port()
    argv = [
        str(Path(python).parent / "plowline-loader"),
        "run",
        "--config",
        str(config_file),
        "--resolver",
        str(resolver_file),
    ]
    argv += ["--checkpoint", str(root / "checkpoint"), "--port", str(port)]
    if args.max_messages is not None:
        argv += ["--max-messages", str(args.max_messages)]
    if args.max_bytes is not None:
        argv += ["--max-bytes", str(args.max_bytes)]
    env = {**os.environ, **stack.env(), "PLOWLINE_LOADER_LOG_JSON": "false", **(loader_env or {})}
    # As from a shell with the loader's venv active (Spark's Python workers included).
    env["PATH"] = f"{Path(python).parent}{os.pathsep}{env.get('PATH', '')}"
    log = root / "loader.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    started = time.monotonic()
    cpu = TreeCpu(process.pid, {server.pid for server in stack.servers.values()})
    servers = {name: server.pid for name, server in stack.servers.items()}
    snapshot = cpu.snapshot
    try:
        first_at = _wait(process, log, lambda: _count(stack, table_ref) > 0, 300)
        at_first = snapshot()
        _wait(process, log, lambda: _events_in(log) >= args.warmup, 300)
        time.sleep(2.0)  # let the last batch's acks and the worker hand-backs settle
        profilers = None
        if args.profile:  # before the freeze: jcmd cannot attach to a stopped JVM
            profilers = Profilers(args.profile, process.pid, snapshot().jvm_pid, root)
            cpu.not_adopted.add(profilers.pid)
        os.killpg(process.pid, signal.SIGSTOP)
        try:
            _publish(stack, topic, backlog)
        finally:
            before = snapshot()
            stack_before = {name: cpu_seconds([pid]) for name, pid in servers.items()}
            os.killpg(process.pid, signal.SIGCONT)
        total = args.warmup + args.events
        resumed = time.monotonic()
        batches = _BatchJvm(log, snapshot, before)
        drained_at = _wait(process, log, lambda: batches.events_in() >= total, 600)
        after = snapshot()
        stack_spent = {n: cpu_seconds([pid]) - stack_before[n] for n, pid in servers.items()}
        batches.print()
        if profilers is not None:
            profilers.stop()
        time.sleep(args.idle_seconds)
        idle = snapshot().minus(after)
    finally:
        cpu.close()
        os.killpg(process.pid, signal.SIGCONT)  # in case the publish failed while frozen
        process.send_signal(signal.SIGTERM)  # the driver alone: it stops Spark gracefully
        process.wait(120)
    drain = after.minus(before)
    per_event = {kind: drain.by_kind[kind] * 1e6 / args.events for kind in KINDS}
    per_event["total"] = drain.total * 1e6 / args.events
    _print_threads(drain)
    config = _worker_config(config_file, resolver_file)
    return Round(
        first_row_s=first_at - started,
        startup_cpu_s=at_first.total,
        drain_s=drained_at - resumed,
        per_event_us=per_event,
        idle_cores=idle.total / args.idle_seconds,
        transform_us=_transform_us(config, backlog),
        stack_us={name: spent * 1e6 / args.events for name, spent in stack_spent.items()},
    )


def _worker_config(config_file: Path, resolver_file: Path) -> WorkerConfig:
    from plowline_loader.bootstrap import worker_config
    from plowline_loader.settings import load_settings

    settings = load_settings(
        # The transform ignores the write mode; FILE_LOADS's settings just need a bucket.
        {"config": str(config_file), "resolver": str(resolver_file), "staging_bucket": "unused"}
    )
    return worker_config(settings, "0.0.0")


def _print_threads(drain: Snapshot) -> None:
    """Print the JVM threads that used the most CPU during the drain."""
    top = Counter({name: cpu for name, cpu in drain.jvm_threads.items() if cpu > 0})
    parts = [f"{name} {cpu:.2f}" for name, cpu in top.most_common(6)]
    print("    JVM threads during the drain (CPU-s): " + ", ".join(parts), flush=True)


def main() -> None:
    """Run the rounds (and the profiled round) and print the medians."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--events", type=int, default=30_000, help="backlog drained (30000)")
    parser.add_argument("--warmup", type=int, default=5_000, help="events before it (5000)")
    parser.add_argument(
        "--rounds", type=int, default=3, help="measured rounds; medians (3; 0: only --profile's)"
    )
    parser.add_argument(
        "--idle-seconds", type=float, default=10.0, help="idle window after the drain (10)"
    )
    parser.add_argument(
        "--max-messages",
        type=_budgets,
        default=[None],
        help="the loader's --max-messages: messages per partition per micro-batch "
        "(default: the loader's own, 10000); several, comma-separated: each in every round",
    )
    parser.add_argument(
        "--max-bytes",
        type=int,
        help="the loader's --max-bytes, for every loader run (default: the loader's own, "
        "16 MiB: ~11,000 of these lines, so it binds before --max-messages above that)",
    )
    parser.add_argument(
        "--profile", type=Path, metavar="DIR", help="add a profiled round; write profiles to DIR"
    )
    parser.add_argument(
        "--baseline-python",
        metavar="PYTHON",
        help="also run another checkout's loader (its venv's python), alternating rounds",
    )
    args = parser.parse_args()
    adopt_orphans()
    root = Path(tempfile.mkdtemp(prefix="plowline-bench-cpu-"))
    atexit.register(shutil.rmtree, root, True)  # the stack's data and checkpoints: GBs a run
    stack = start_stack(root / "stack", StackConfig())
    pythons = {"this": sys.executable}
    if args.baseline_python:
        pythons = {"baseline": args.baseline_python, **pythons}
    loaders: dict[str, tuple[str, int | None]] = {}
    for name, python in pythons.items():
        for budget in args.max_messages:
            loaders[name if budget is None else f"{name}@{budget}"] = (python, budget)
    runs: dict[str, list[Round]] = {name: [] for name in loaders}
    try:
        for number in range(args.rounds):
            for name, (python, budget) in loaders.items():
                measured = argparse.Namespace(**{**vars(args), "profile": None})
                measured.max_messages = budget
                where = root / f"round-{number}-{name.replace('@', '-')}"
                r = _round(stack, where, measured, seed=10 * number, python=python)
                runs[name].append(r)
                kinds = ", ".join(f"{k} {v:.1f}" for k, v in r.per_event_us.items())
                print(
                    f"  round {number + 1} {name}: CPU-µs/event {kinds}; transform "
                    f"{r.transform_us:.1f}; drain {r.drain_s:.1f} s; idle {r.idle_cores:.3f} "
                    f"cores; start-up {r.startup_cpu_s:.1f} CPU-s, first row {r.first_row_s:.1f} s",
                    flush=True,
                )
        if args.profile:
            args.profile.mkdir(parents=True, exist_ok=True)
            profiled = argparse.Namespace(**{**vars(args), "max_messages": args.max_messages[0]})
            _round(stack, root / "profiled", profiled, seed=99)
    finally:
        stack.stop()
    for name, rounds in runs.items():
        if rounds:
            _report(f"{name} ({loaders[name][0]})", rounds, args)
    if args.baseline_python and args.rounds:
        for budget in args.max_messages:
            suffix = "" if budget is None else f"@{budget}"
            _compare(runs[f"baseline{suffix}"], runs[f"this{suffix}"])


def _budgets(text: str) -> list[int | None]:
    """Parse ``--max-messages``: one budget or several, comma-separated."""
    return [int(part) for part in text.split(",")]


def _compare(baseline: list[Round], this: list[Round]) -> None:
    """Print this loader's medians per event as ratios of the baseline's (same run)."""
    print("this / baseline (medians of CPU-µs per event; < 1: this spends less)")
    for kind in ("total", *KINDS):
        before = statistics.median(r.per_event_us[kind] for r in baseline)
        after = statistics.median(r.per_event_us[kind] for r in this)
        if before:  # a kind neither spent anything on ("other") has no ratio
            print(f"  {kind:<36} {after / before:6.2f}")
    before = statistics.median(r.transform_us / r.per_event_us["total"] for r in baseline)
    after = statistics.median(r.transform_us / r.per_event_us["total"] for r in this)
    print(f"  transform's share: baseline {before:.2f}, this {after:.2f}")


def _report(name: str, rounds: list[Round], args: argparse.Namespace) -> None:
    def median(values: list[float]) -> float:
        return statistics.median(values)

    loader = median([r.per_event_us["total"] for r in rounds])
    transform = median([r.transform_us for r in rounds])
    share = median([r.transform_us / r.per_event_us["total"] for r in rounds])
    print(f"{name} loader CPU: {args.events:,} backlog after {args.warmup:,} warm-up, ", end="")
    print(f"median of {len(rounds)} rounds")
    print(f"  loader CPU per event (steady state)  {loader:8.1f} µs")
    for kind in KINDS:
        print(f"    {kind:<34} {median([r.per_event_us[kind] for r in rounds]):8.1f} µs")
    print(
        f"  drain rate                           {median([args.events / r.drain_s for r in rounds]):8.0f} events/s"
    )
    for server in rounds[0].stack_us:
        spent = median([r.stack_us[server] for r in rounds])
        busy = median([r.stack_us[server] * args.events / 1e6 / r.drain_s for r in rounds])
        print(
            f"  local {server:<13} CPU per event   {spent:8.1f} µs (busy {busy:.0%} of the drain)"
        )
    print(f"  bare transform CPU per event         {transform:8.1f} µs")
    print(f"  transform's share (transform/loader) {share:8.2f}")
    print(
        f"  idle CPU                             {median([r.idle_cores for r in rounds]):8.3f} cores"
    )
    print(
        f"  start-up CPU (to the first row)      {median([r.startup_cpu_s for r in rounds]):8.1f} s"
    )
    print(
        f"  start → first row                    {median([r.first_row_s for r in rounds]):8.1f} s"
    )


if __name__ == "__main__":
    main()
