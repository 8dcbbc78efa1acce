"""Measure the streaming loader on the local stack: throughput, latency, memory.

Run: ``uv run python bench/loader.py [--events 20000] [--rate 1000] [--seconds 90]
[--max-messages 5000]``.

1. Sustained: publish ``--events`` enriched events (3 contexts/unstruct mixes) as a
   backlog, then drain it with the loader (Spark local[2], warmed): events/s Pub/Sub →
   table at steady state (first micro-batch to last) and from the query's start.
2. Ceiling: insert the same kind of rows straight into bqemulator with ``BigQueryRowSink``
   (500-row insertAll requests, one thread), same run: rows/s; and the ratio of the two.
3. Latency: offer ``--rate`` events/s for ``--seconds`` with the loader running; publish →
   row inserted p50/p99 (publish time from Pub/Sub, insert time when insertAll returned) of
   the rows landed after the phase's first ``SETTLE_S`` seconds. The query starts with the
   phase, and its first micro-batch holds the events that waited for it (~800 events of up to
   1 s): counted, they were ~45% of the p99 tail and made p99 a start-up figure. The p99
   with them is printed too.
4. Memory of the loader at steady state: this process (the driver's Python), the JVM and
   the Spark Python workers (the process tree under this process), from /proc, sampled
   each second of the latency phase's last ``MEMORY_WINDOW_S``: PSS (each shared page
   divided among its sharers: what the tree holds) and the plain RSS sum. A 90 s phase
   lets Spark reap the Python workers that planned the query (idle for a minute by
   then), as in a loader that has been running a while.

The stack runs as child processes of this one but is excluded from the memory figures.
"""

from __future__ import annotations

import argparse
import atexit
import json
import shutil
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from plowline_cloud.bigquery import BigQueryRowSink
from plowline_cloud.clients import bigquery_client, publisher_client, subscriber_client
from plowline_cloud.clock import SystemClock
from plowline_cloud.table_schema import BigQueryTableSchemaStore
from plowline_core.config import BigQueryConfig
from plowline_core.iglu.key import SchemaKey
from plowline_core.ports import Row
from plowline_core.schema.columns import column_field
from plowline_core.schema.entity import ColumnMode, ShredProperty
from plowline_core.testing.tsv import with_entities
from plowline_devstack.stack.lifecycle import LocalStack, start_stack
from plowline_devstack.stack.provisioning import StackConfig
from plowline_loader.batch.outcome import BatchOutcome
from plowline_loader.bootstrap import WorkerConfig, build_processor
from plowline_loader.spark.session import SparkSettings, build_spark_session
from plowline_loader.streaming import StreamingLoader, StreamSettings
from pyspark.sql import SparkSession
from pyspark.sql.streaming.query import StreamingQuery

CTX_A = SchemaKey.parse("iglu:com.acme/ctx_a/jsonschema/1-0-0")
CTX_B = SchemaKey.parse("iglu:com.acme/ctx_b/jsonschema/1-0-0")
CLICK = SchemaKey.parse("iglu:com.acme/click/jsonschema/1-0-0")
SCHEMAS = {
    CTX_A: ({"type": "object", "properties": {"a": {"type": "integer"}}}, ShredProperty.CONTEXTS),
    CTX_B: ({"type": "object", "properties": {"b": {"type": "string"}}}, ShredProperty.CONTEXTS),
    CLICK: (
        {"type": "object", "properties": {"x": {"type": "string"}}},
        ShredProperty.UNSTRUCT_EVENT,
    ),
}


def _line(n: int) -> tuple[str, str]:
    event_id = str(uuid.uuid4())
    contexts: list[tuple[str, dict[str, Any]]] = [(CTX_A.to_uri(), {"a": n})]
    if n % 2:
        contexts.append((CTX_B.to_uri(), {"b": f"v{n}"}))
    unstruct = (CLICK.to_uri(), {"x": str(n)}) if n % 3 == 0 else None
    return event_id, with_entities(contexts=contexts, unstruct_event=unstruct, event_id=event_id)


def _registry_dir(root: Path) -> Path:
    for key, (schema, _) in SCHEMAS.items():
        path = root / "schemas" / key.to_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(schema))
    resolver = {
        "schema": "iglu:com.snowplowanalytics.iglu/resolver-config/jsonschema/1-0-3",
        "data": {
            "cacheSize": 500,
            "cacheTtl": 600,
            "repositories": [
                {
                    "name": "acme",
                    "priority": 0,
                    "vendorPrefixes": [],
                    "connection": {"embedded": {"path": "."}},
                }
            ],
        },
    }
    (root / "resolver.json").write_text(json.dumps(resolver))
    return root


def _config(stack: LocalStack, root: Path, subscription: str) -> WorkerConfig:
    bigquery = BigQueryConfig.parse(
        {
            "schema": "iglu:com.snowplowanalytics.snowplow.storage/bigquery_config/jsonschema/1-0-0",
            "data": {
                "name": "bench",
                "id": "31b1559d-d319-4023-aaae-97698238d808",
                "projectId": stack.project,
                "datasetId": stack.dataset,
                "tableId": stack.table,
                "input": subscription,
                "typesTopic": "types",
                "typesSubscription": "types-mutator",
                "badRows": "bad-rows",
                "failedInserts": "failed-inserts",
                "load": {"mode": "STREAMING_INSERTS", "retry": False},
                "purpose": "ENRICHED_EVENTS",
            },
        }
    )
    return WorkerConfig(
        bigquery=bigquery,
        resolver_json=(root / "resolver.json").read_text(),
        resolver_dir=str(root),
        column_mode=ColumnMode.FULL,
        version="0.1.0",
        pubsub_emulator_host=stack.endpoints.pubsub_target,
        bigquery_emulator_host=stack.endpoints.bigquery_url,
    )


def _channel(stack: LocalStack) -> tuple[str, str]:
    name = uuid.uuid4().hex[:8]
    topic = f"projects/{stack.project}/topics/bench-{name}"
    sub = f"projects/{stack.project}/subscriptions/bench-{name}"
    publisher_client(stack.endpoints.pubsub_target).create_topic(request={"name": topic})
    subscriber_client(stack.endpoints.pubsub_target).create_subscription(
        request={"name": sub, "topic": topic, "ack_deadline_seconds": 60}
    )
    return topic, f"bench-{name}"


def _publish(stack: LocalStack, topic: str, lines: list[str]) -> None:
    publisher = publisher_client(stack.endpoints.pubsub_target)
    futures = [publisher.publish(topic, line.encode()) for line in lines]
    for future in futures:
        future.result(timeout=120)


MAX_MESSAGES = StreamSettings(checkpoint="").max_messages
"""Messages per partition per micro-batch unless ``--max-messages``: the loader's default."""


def _loader(
    spark: SparkSession,
    config: WorkerConfig,
    root: Path,
    observe: Callable[[BatchOutcome], None],
    max_messages: int,
) -> StreamingLoader:
    settings = StreamSettings(
        checkpoint=str(root / f"cp-{uuid.uuid4().hex[:6]}"),
        max_messages=max_messages,
        pull_timeout_s=0.5,
    )
    return StreamingLoader(spark, config, settings, observer=observe)


def _sustained(
    spark: SparkSession, stack: LocalStack, root: Path, events: int, max_messages: int
) -> tuple[float | None, float]:
    """Drain a backlog of ``events``; return events/s at steady state and from query start.

    Notes:
        Steady state runs from the end of the first micro-batch to the end of the last and
        counts the events of the batches in between: it leaves out the query's start
        (planning the first batch, about 2 s), which a long-running loader pays once.
    """
    topic, sub = _channel(stack)
    _publish(stack, topic, [_line(n)[1] for n in range(events)])
    seen: list[BatchOutcome] = []
    ends: list[tuple[float, int]] = []  # (when a batch was recorded, events so far)

    def observe(outcome: BatchOutcome) -> None:
        seen.append(outcome)
        ends.append((time.monotonic(), sum(o.events_in for o in seen)))

    loader = _loader(spark, _config(stack, root, sub), root, observe, max_messages)
    started = time.monotonic()
    query = loader.start()
    while loader.writer.totals.events_in < events:
        _check_running(query)
        time.sleep(0.05)
    elapsed = time.monotonic() - started
    query.processAllAvailable()
    loader.stop(30)
    (first_at, first_count), (last_at, last_count) = ends[0], ends[-1]
    steady = (last_count - first_count) / (last_at - first_at) if len(ends) > 1 else None
    return steady, events / elapsed


def _check_running(query: StreamingQuery) -> None:
    """Stop the bench with the query's error instead of waiting forever for its rows."""
    if not query.isActive:
        raise SystemExit(f"the loader's query stopped: {query.exception()}")


def _ceiling(stack: LocalStack, rows: int) -> float:
    client = bigquery_client(stack.project, stack.endpoints.bigquery_url)
    store = BigQueryTableSchemaStore(client, stack.table_ref, 600.0, SystemClock())
    sink = BigQueryRowSink(client, stack.table_ref, store)
    config = _config(stack, ROOT, "unused")
    builder = build_processor(config)._builder
    prepared = []
    for n in range(rows):
        row = builder.transform_line(_line(n)[1])
        data = dict(row.data)  # type: ignore[union-attr]
        prepared.append(Row(data["event_id"], data))
    started = time.monotonic()
    for start in range(0, rows, 500):
        sink.insert(prepared[start : start + 500])
    return rows / (time.monotonic() - started)


def _latency(
    spark: SparkSession,
    stack: LocalStack,
    root: Path,
    rate: int,
    seconds: float,
    max_messages: int,
) -> tuple[float, float, float, tuple[int, int]]:
    topic, sub = _channel(stack)
    seen: list[tuple[float, BatchOutcome]] = []

    def observe(outcome: BatchOutcome) -> None:
        seen.append((time.monotonic(), outcome))

    loader = _loader(spark, _config(stack, root, sub), root, observe, max_messages)
    query = loader.start()
    publisher = publisher_client(stack.endpoints.pubsub_target)
    total = int(rate * seconds)
    started = time.monotonic()
    futures: list[Any] = []
    memory_samples: list[tuple[int, int]] = []
    for n in range(total):
        due = started + n / rate
        pause = due - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        futures.append(publisher.publish(topic, _line(n)[1].encode()))
        if n % rate == 0:
            # Keep only unresolved publishes: the driver's memory is measured, not the bench's.
            for future in [f for f in futures if f.done()]:
                future.result()
            futures = [f for f in futures if not f.done()]
            if n > rate * max(seconds - MEMORY_WINDOW_S, seconds / 2):
                memory_samples.append(_loader_memory())
    for future in futures:
        future.result(timeout=60)
    while loader.writer.totals.events_in < total:
        _check_running(query)
        time.sleep(0.1)
    query.processAllAvailable()
    loader.stop(30)
    settled = sorted(
        x for at, outcome in seen if at - started >= SETTLE_S for x in outcome.publish_latency_s
    )
    everything = sorted(x for _, outcome in seen for x in outcome.publish_latency_s)
    samples = memory_samples or [_loader_memory()]
    return (
        statistics.median(settled),
        _p99(settled),
        _p99(everything),
        (max(r for r, _ in samples), max(p for _, p in samples)),
    )


def _p99(ordered: list[float]) -> float:
    return ordered[int(len(ordered) * 0.99) - 1]


def _children(pid: int) -> list[int]:
    """Return the process tree under ``pid``; processes and threads may exit meanwhile."""
    out: list[int] = []
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:  # the process ended since its parent listed it
        return out
    for task in tasks:
        try:
            children = (task / "children").read_text().split()
        except OSError:  # the thread (or process) ended since the listing
            continue
        for child in children:
            out.append(int(child))
            out.extend(_children(int(child)))
    return out


def _memory(pid: int) -> tuple[int, int]:
    """Return the process's (RSS, PSS) in bytes; (0, 0) once it is gone.

    Notes:
        RSS counts every page the process maps, so summing it over the pyspark daemon and
        the workers it forked counts their shared copy-on-write pages once per process.
        PSS divides each shared page among the processes sharing it: its sum over the
        tree is the memory the tree really holds.
    """
    try:
        fields = dict(
            line.split(":", 1)
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]
        )
    except OSError:  # gone, or a zombie (ProcessLookupError)
        return 0, 0
    return int(fields["Rss"].split()[0]) * 1024, int(fields["Pss"].split()[0]) * 1024


STACK_PIDS: set[int] = set()


def _loader_memory() -> tuple[int, int]:
    """Return the loader's (RSS, PSS) sums: this process and its tree, the stack left out."""
    import os

    me = os.getpid()
    pids = [me] + [p for p in _children(me) if p not in STACK_PIDS]
    stack_tree = {c for s in STACK_PIDS for c in _children(s)}
    sizes = [_memory(p) for p in pids if p not in stack_tree]
    return sum(r for r, _ in sizes), sum(p for _, p in sizes)


ROOT = Path(tempfile.mkdtemp(prefix="plowline-bench-loader-"))
atexit.register(shutil.rmtree, ROOT, True)  # the stack's data and checkpoints: GBs a run
MEMORY_WINDOW_S = 15.0
SETTLE_S = 5.0  # the latency phase's start, left out of p50/p99 (the query's first batch)


def main() -> None:
    """Run the four measurements and print a table."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--events",
        type=int,
        default=60_000,
        help="backlog drained for throughput (60000: several micro-batches at the loader's"
        " default of 10,000 messages a partition; steady state needs at least two)",
    )
    parser.add_argument(
        "--rate", type=int, default=1000, help="offered events/s for the latency phase (1000)"
    )
    parser.add_argument(
        "--max-messages",
        type=int,
        default=MAX_MESSAGES,
        help=f"messages per partition per micro-batch (the loader's default, {MAX_MESSAGES})",
    )
    parser.add_argument(
        "--seconds", type=float, default=90.0, help="length of the latency phase (90)"
    )
    args = parser.parse_args()
    stack = start_stack(ROOT / "stack", StackConfig())
    STACK_PIDS.update(server.pid for server in stack.servers.values())
    spark: SparkSession | None = None
    try:
        client = bigquery_client(stack.project, stack.endpoints.bigquery_url)
        store = BigQueryTableSchemaStore(client, stack.table_ref, 60.0, SystemClock())
        store.add_fields([column_field(k, s, shred) for k, (s, shred) in SCHEMAS.items()])
        _registry_dir(ROOT)
        spark = build_spark_session(SparkSettings(master="local[2]", app_name="plowline-bench"))
        _sustained(
            spark, stack, ROOT, 1000, args.max_messages
        )  # warm-up: first batch, Python workers, clients
        rate, from_start = _sustained(spark, stack, ROOT, args.events, args.max_messages)
        if rate is None:
            raise SystemExit(
                f"the {args.events:,}-event backlog fit one micro-batch: no steady state to"
                " measure; raise --events or lower --max-messages"
            )
        ceiling = _ceiling(stack, min(args.events, 10_000))
        p50, p99, p99_with_start, (rss, pss) = _latency(
            spark, stack, ROOT, args.rate, args.seconds, args.max_messages
        )
    finally:
        if spark is not None:
            spark.stop()
        stack.stop()
    rows = [
        ("sustained Pub/Sub → table", f"{rate:,.0f} events/s", f"{args.events:,} backlog"),
        ("  same, counting the query's start", f"{from_start:,.0f} events/s", ""),
        ("bqemulator insertAll ceiling", f"{ceiling:,.0f} rows/s", "500-row requests"),
        ("loader / ceiling", f"{rate / ceiling:.2f}", ""),
        (
            f"publish → insert p50 @ {args.rate}/s",
            f"{p50 * 1000:,.0f} ms",
            f"{args.seconds:.0f} s, the first {SETTLE_S:.0f} s left out",
        ),
        (f"publish → insert p99 @ {args.rate}/s", f"{p99 * 1000:,.0f} ms", ""),
        ("  same, with the query's start", f"{p99_with_start * 1000:,.0f} ms", ""),
        ("loader PSS (driver+JVM+workers)", f"{pss / 2**20:,.0f} MiB", "steady state, max"),
        (
            "loader RSS sum (shared pages counted n times)",
            f"{rss / 2**20:,.0f} MiB",
            "steady state, max",
        ),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"{'measure':<{width}}  {'value':>16}  note")
    for name, value, note in rows:
        print(f"{name:<{width}}  {value:>16}  {note}")


if __name__ == "__main__":
    threading.current_thread().name = "bench"
    main()
