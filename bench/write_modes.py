"""Benchmark the BigQuery write modes on the local stack: sinks alone, then the streaming loader.

The same ``--events`` enriched TSV lines (``plowline_core.testing.tsv``, atomic fields,
unique event ids) feed both parts, one run each:

1. Sinks: the lines' BigQuery-JSON rows (``RowBuilder``) are inserted into a fresh table by
   each sink: events/s and bytes sent to BigQuery per event (the row payload each sink
   puts on the wire: JSON for insertAll and loads, protobuf for the Write API, ledger rows
   included for exactly-once; not HTTP/gRPC framing).
2. Loader: per ``load.mode``, the lines are published to a fresh subscription as a backlog
   and the streaming loader (Spark local[2], session warmed once) loads them into a fresh
   table: events/s from query start until ``COUNT(*)`` reaches ``--events``. Then, with
   the loader still running, ``--latency-events`` more are published at ``--rate``/s and
   a poller queries the table every ``--poll`` s: publish → queryable p50/p99 (a row
   counts as queryable when a query first returns it; the poll period bounds the error).
   FILE_LOADS runs with a trigger interval of ``--file-loads-window`` s instead of its
   ``frequency`` (≥ 100 s in Snowplow's schema), so its latency is about that window.

Modes: insertAll (STREAMING_INSERTS), Write API default stream, Write API exactly-once
(PENDING streams + ledger, keyed by event id), FILE_LOADS (NDJSON staged in GCS + load job).

Run: ``uv run python bench/write_modes.py [--events 5000] [--batch 2500]
[--latency-events 1000] [--rate 250] [--skip-loader]``
"""

from __future__ import annotations

import argparse
import atexit
import json
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from google.cloud import bigquery
from plowline_cloud.clients import (
    bigquery_client,
    publisher_client,
    storage_client,
    subscriber_client,
)
from plowline_cloud.load_jobs import FileLoadSink
from plowline_cloud.row_sink import BigQueryRowSink, encoded_size
from plowline_cloud.table_schema import BigQueryTableSchemaStore
from plowline_cloud.write_api import write_client
from plowline_cloud.write_api_committed import WriteApiRowSink
from plowline_cloud.write_api_pending import ExactlyOnceSink, ensure_ledger
from plowline_core.config import BigQueryConfig
from plowline_core.event.fields import ATOMIC_COLUMNS
from plowline_core.iglu.config import EmbeddedConnection, RepositoryRef
from plowline_core.iglu.resolver import Resolver
from plowline_core.ports import Row
from plowline_core.schema.entity import ColumnMode
from plowline_core.testing.clock import FixedClock
from plowline_core.testing.registry import InMemoryRegistry
from plowline_core.testing.tsv import enriched_line
from plowline_core.transform.row import RowBuilder
from plowline_devstack.stack.lifecycle import LocalStack, start_stack
from plowline_devstack.stack.provisioning import StackConfig
from plowline_loader.bootstrap import WorkerConfig
from plowline_loader.spark.session import SparkSettings, build_spark_session
from plowline_loader.streaming import StreamingLoader, StreamSettings
from pyspark.sql import SparkSession

CLOCK = FixedClock(datetime(2024, 1, 1, tzinfo=UTC))
LATENCY_APP = "bench-latency"  # app_id of the latency phase's events: the poller's filter
LOADS: dict[str, dict[str, Any]] = {
    "insertAll": {"mode": "STREAMING_INSERTS", "retry": False},
    "Write API default": {"mode": "STORAGE_WRITE_API", "stream": "default"},
    "Write API exactly-once": {"mode": "STORAGE_WRITE_API", "stream": "exactly-once"},
    "FILE_LOADS": {"mode": "FILE_LOADS", "frequency": 100},
}


def make_lines(count: int, app_id: str = "bench") -> list[str]:
    """Return ``count`` realistic enriched lines with unique event ids."""
    return [enriched_line(event_id=str(uuid.uuid4()), app_id=app_id) for _ in range(count)]


def make_rows(lines: list[str]) -> list[Row]:
    """Return the good BigQuery-JSON rows of ``lines`` (atomic rows: no schema lookups)."""
    registry = InMemoryRegistry("empty")
    ref = RepositoryRef(registry.name, 0, (), EmbeddedConnection("/nonexistent"))
    builder = RowBuilder(Resolver([(ref, registry)], CLOCK))
    rows: list[Row] = []
    for line in lines:
        data = getattr(builder.transform_line(line), "data", None)
        if data is not None:
            rows.append(Row(str(data["event_id"]), data))
    return rows


def _fresh_table(bq: bigquery.Client) -> bigquery.TableReference:
    name = f"{bq.project}.snowplow.bench_{uuid.uuid4().hex[:10]}"
    schema = [bigquery.SchemaField.from_api_repr(f.to_api()) for f in ATOMIC_COLUMNS]
    bq.create_table(bigquery.Table(name, schema=schema))
    return bigquery.TableReference.from_string(name)


Factory = Callable[[bigquery.TableReference, BigQueryTableSchemaStore], Any]


def run_sink(
    bq: bigquery.Client, factory: Factory, rows: list[Row], batch: int
) -> tuple[float, float]:
    """Load ``rows`` into a fresh table with one sink; return (events/s, bytes per event)."""
    table = _fresh_table(bq)
    store = BigQueryTableSchemaStore(bq, table, 3600.0, CLOCK)
    sink = factory(table, store)
    started = time.perf_counter()
    for start in range(0, len(rows), batch):
        failures = sink.insert(rows[start : start + batch])
        if failures:
            raise SystemExit(f"{type(sink).__name__}: {failures[0]}")
    elapsed = time.perf_counter() - started
    sent = getattr(sink, "bytes_sent", None)
    if sent is None:  # insertAll: the JSON rows the request bodies carry
        sent = sum(encoded_size(row) for row in rows)
    bq.delete_table(table, not_found_ok=True)
    return len(rows) / elapsed, sent / len(rows)


def sink_factories(stack: LocalStack, bq: bigquery.Client) -> dict[str, Factory]:
    """Return one sink factory per mode, on the stack's BigQuery and storage."""
    writes = write_client(stack.endpoints.bigquery_grpc_target)
    gcs = storage_client(stack.project, stack.endpoints.storage_url)
    bucket = sorted(stack.config.buckets)[0]

    def exactly_once(table: bigquery.TableReference, store: Any) -> ExactlyOnceSink:
        ledger = f"{table.project}.{table.dataset_id}.{table.table_id}_ledger"
        ensure_ledger(bq, ledger)
        return ExactlyOnceSink(writes, bq, table, ledger, store)

    return {
        "insertAll": lambda t, s: BigQueryRowSink(bq, t, s),
        "Write API default": lambda t, s: WriteApiRowSink(writes, t, s),
        "Write API exactly-once": exactly_once,
        "FILE_LOADS": lambda t, s: FileLoadSink(bq, gcs, bucket, t, s, BigQueryRowSink(bq, t, s)),
    }


@dataclass(frozen=True)
class LoaderRun:
    """What one mode's loader run measured."""

    events_per_s: float
    p50_s: float
    p99_s: float


class _Poller:
    """Query the table every ``period`` s; remember when each latency event first showed."""

    def __init__(self, bq: bigquery.Client, table: str, period: float) -> None:
        self.seen: dict[str, float] = {}
        self._bq, self._period = bq, period
        self._sql = f"SELECT event_id FROM `{table}` WHERE app_id = '{LATENCY_APP}'"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._period):
            rows = self._bq.query(self._sql).result()
            now = time.time()
            for row in rows:
                self.seen.setdefault(str(row["event_id"]), now)

    def stop(self) -> None:
        """Stop polling."""
        self._stop.set()
        self._thread.join()


def _channel(stack: LocalStack) -> tuple[str, str]:
    name = uuid.uuid4().hex[:8]
    topic = f"projects/{stack.project}/topics/bench-{name}"
    sub = f"projects/{stack.project}/subscriptions/bench-{name}"
    publisher_client(stack.endpoints.pubsub_target).create_topic(request={"name": topic})
    subscriber_client(stack.endpoints.pubsub_target).create_subscription(
        request={"name": sub, "topic": topic, "ack_deadline_seconds": 60}
    )
    return topic, f"bench-{name}"


def _worker_config(
    stack: LocalStack, root: Path, table: bigquery.TableReference, sub: str, load: dict[str, Any]
) -> WorkerConfig:
    data = {
        "name": "bench",
        "id": "31b1559d-d319-4023-aaae-97698238d808",
        "projectId": stack.project,
        "datasetId": table.dataset_id,
        "tableId": table.table_id,
        "input": sub,
        "typesTopic": "types",
        "typesSubscription": "types-mutator",
        "badRows": "bad-rows",
        "failedInserts": "failed-inserts",
        "load": load,
        "purpose": "ENRICHED_EVENTS",
    }
    schema = "iglu:com.snowplowanalytics.snowplow.storage/bigquery_config/jsonschema/1-0-0"
    resolver = {
        "schema": "iglu:com.snowplowanalytics.iglu/resolver-config/jsonschema/1-0-3",
        "data": {
            "cacheSize": 10,
            "cacheTtl": 60,
            "repositories": [  # never asked: the lines carry no entities
                {
                    "name": "empty",
                    "priority": 0,
                    "vendorPrefixes": [],
                    "connection": {"embedded": {"path": str(root)}},
                }
            ],
        },
    }
    return WorkerConfig(
        bigquery=BigQueryConfig.parse({"schema": schema, "data": data}),
        resolver_json=json.dumps(resolver),
        resolver_dir=str(root),
        column_mode=ColumnMode.FULL,
        version="0.1.0",
        pubsub_emulator_host=stack.endpoints.pubsub_target,
        bigquery_emulator_host=stack.endpoints.bigquery_url,
        bigquery_grpc_host=stack.endpoints.bigquery_grpc_target,
        storage_emulator_host=stack.endpoints.storage_url,
        staging_bucket=sorted(stack.config.buckets)[0],
    )


def _count(bq: bigquery.Client, table: str) -> int:
    return int(next(iter(bq.query(f"SELECT COUNT(*) AS n FROM `{table}`").result()))["n"])


def _publish(stack: LocalStack, topic: str, lines: list[str], rate: float = 0.0) -> list[float]:
    """Publish ``lines`` (paced at ``rate``/s when positive); return each one's send time."""
    publisher = publisher_client(stack.endpoints.pubsub_target)
    sent: list[float] = []
    futures = []
    started = time.monotonic()
    for n, line in enumerate(lines):
        if rate > 0:
            # Real time on purpose: a benchmark offers load at a wall-clock rate.
            time.sleep(max(0.0, started + n / rate - time.monotonic()))
        sent.append(time.time())
        futures.append(publisher.publish(topic, line.encode()))
    for future in futures:
        future.result(timeout=120)
    return sent


def run_loader(
    spark: SparkSession,
    stack: LocalStack,
    bq: bigquery.Client,
    load: dict[str, Any],
    lines: list[str],
    args: argparse.Namespace,
) -> LoaderRun:
    """Load ``lines`` through the streaming loader in mode ``load``; measure rate and latency."""
    root = Path(tempfile.mkdtemp(prefix="plowline-bench-loader-"))
    atexit.register(shutil.rmtree, root, True)  # the stack's data and checkpoints: GBs a run
    table = _fresh_table(bq)
    full = f"{table.project}.{table.dataset_id}.{table.table_id}"
    topic, sub = _channel(stack)
    _publish(stack, topic, lines)
    window = args.file_loads_window if load["mode"] == "FILE_LOADS" else 0.0
    settings = StreamSettings(
        checkpoint=str(root / "checkpoint"),
        max_messages=args.max_messages,
        pull_timeout_s=0.5,
        trigger_interval_s=window,
    )
    loader = StreamingLoader(spark, _worker_config(stack, root, table, sub, load), settings)
    started = time.monotonic()
    query = loader.start()
    try:
        while _count(bq, full) < len(lines):
            if query.exception() is not None:
                raise SystemExit(f"{load}: the loader failed: {query.exception()}")
            time.sleep(0.25)
        rate = len(lines) / (time.monotonic() - started)
        latency = make_lines(args.latency_events, LATENCY_APP)
        wanted = [line.split("\t")[6] for line in latency]
        poller = _Poller(bq, full, args.poll)
        sent = _publish(stack, topic, latency, args.rate)
        deadline = time.monotonic() + 120 + window
        while len(poller.seen) < len(wanted) and time.monotonic() < deadline:
            time.sleep(0.1)
        poller.stop()
    finally:
        loader.stop(30)
    delays = sorted(
        poller.seen[e] - t for e, t in zip(wanted, sent, strict=True) if e in poller.seen
    )
    if len(delays) < len(wanted):
        print(f"  {load}: {len(wanted) - len(delays)} latency events never became queryable")
    return LoaderRun(rate, _quantile(delays, 0.5), _quantile(delays, 0.99))


def _quantile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    return values[min(len(values) - 1, int(q * len(values)))]


def _warm(spark: SparkSession, stack: LocalStack, bq: bigquery.Client) -> None:
    """Run one small load so that Spark's first-batch cost is paid before measuring."""
    args = argparse.Namespace(
        max_messages=1000, latency_events=10, rate=0.0, poll=0.2, file_loads_window=0.0
    )
    run_loader(spark, stack, bq, LOADS["insertAll"], make_lines(100), args)


def main() -> None:
    """Start a local stack, run the sinks and then the loader in every mode, print a table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=5_000, help="events per mode (both parts)")
    parser.add_argument("--batch", type=int, default=2_500, help="rows per sink insert() call")
    parser.add_argument(
        "--latency-events", type=int, default=1_000, help="events per mode, latency phase"
    )
    parser.add_argument("--rate", type=float, default=250.0, help="latency phase events/s")
    parser.add_argument("--poll", type=float, default=0.2, help="seconds between table polls")
    parser.add_argument("--max-messages", type=int, default=1_000, help="per partition per batch")
    parser.add_argument(
        "--file-loads-window",
        type=float,
        default=5.0,
        help="seconds per FILE_LOADS micro-batch (frequency) in the loader part",
    )
    parser.add_argument("--skip-loader", action="store_true", help="sink figures only")
    args = parser.parse_args()
    lines = make_lines(args.events)
    rows = make_rows(lines)
    work = Path(tempfile.mkdtemp(prefix="plowline-bench-"))
    atexit.register(shutil.rmtree, work, True)  # the stack's data and checkpoints: GBs a run
    stack = start_stack(work / "stack", StackConfig(), persistent=False)
    loaders: dict[str, LoaderRun] = {}
    try:
        bq = bigquery_client(stack.project, stack.endpoints.bigquery_url)
        factories = sink_factories(stack, bq)
        sinks = {name: run_sink(bq, f, rows, args.batch) for name, f in factories.items()}
        if not args.skip_loader:
            _print(args, sinks, {})  # printed now too: the loader part takes minutes
        if not args.skip_loader:
            spark = build_spark_session(SparkSettings(app_name="plowline-bench-write-modes"))
            _warm(spark, stack, bq)
            loaders = {
                name: run_loader(spark, stack, bq, load, lines, args)
                for name, load in LOADS.items()
            }
            spark.stop()
    finally:
        stack.stop()
    _print(args, sinks, loaders)


def _print(
    args: argparse.Namespace, sinks: dict[str, tuple[float, float]], loaders: dict[str, LoaderRun]
) -> None:
    print(
        f"{args.events} events per mode; sinks: {args.batch} rows per insert(); loader: "
        f"local[2], {args.max_messages} msgs/partition/batch; latency: "
        f"{args.latency_events} events at {args.rate:g}/s, poll {args.poll:g} s; "
        f"FILE_LOADS window {args.file_loads_window:g} s"
    )
    head = f"{'mode':<24}{'sink ev/s':>11}{'bytes/ev':>10}"
    if loaders:
        head += f"{'loader ev/s':>13}{'p50 s':>8}{'p99 s':>8}"
    print(head)
    for name, (rate, size) in sinks.items():
        line = f"{name:<24}{rate:>11,.0f}{size:>10,.0f}"
        run = loaders.get(name)
        if run is not None:
            line += f"{run.events_per_s:>13,.0f}{run.p50_s:>8.2f}{run.p99_s:>8.2f}"
        print(line)
    default, once = loaders.get("Write API default"), loaders.get("Write API exactly-once")
    insert_all = loaders.get("insertAll")
    if default and once and insert_all:
        print(
            f"loader ratios: Write API default / insertAll = "
            f"{default.events_per_s / insert_all.events_per_s:.2f} (target >= 1); "
            f"exactly-once / default = {once.events_per_s / default.events_per_s:.2f} "
            "(target >= 0.7)"
        )


if __name__ == "__main__":
    main()
