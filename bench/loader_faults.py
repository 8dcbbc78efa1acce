"""Measure the streaming loader's throughput with faults on against none, in the same run.

Run: ``uv run python bench/loader_faults.py [--faults FILE] [--events 40000]
[--max-messages N] [--rounds 2] [--mode streaming-inserts|write-api-default]`` (default plan: ``examples/faults-1pct.toml``, 1% of
BigQuery and Pub/Sub calls failing; the goal: faulty / kind >= 0.8).

Runs each plan ``--rounds`` times, ordered none, faults, then faults, none, ... (so what
the machine does meanwhile weighs on both alike), each on a fresh local stack with the
same Spark session (local[2]) and the same traffic as ``bench/loader.py``'s sustained
phase: warm up with 1,000 events, drain a backlog of ``--events`` enriched events, and
take events/s at steady state and from the query's start (``bench/loader.py`` explains
both); the figures printed are medians. Then it counts the table's rows and distinct event
ids: with faults on, a difference is a duplicate and a shortfall a loss (counts are exact:
every run starts from an empty table).

Notes:
    The drain ends when the loader has taken in ``--events`` messages; redeliveries count,
    so with Pub/Sub duplicates on the faulty drain ends a little early (the counts above
    show what reached the table).
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import threading
import time
from pathlib import Path

import loader as base  # bench/loader.py: the traffic, the loader config, the sustained phase
import plowline_devstack
from google.cloud import bigquery
from google.cloud.bigquery.retry import DEFAULT_RETRY
from plowline_cloud.clients import bigquery_client
from plowline_cloud.clock import SystemClock
from plowline_cloud.table_schema import BigQueryTableSchemaStore
from plowline_core.config import LoadKind, LoadMode, WriteStreamKind
from plowline_core.schema.columns import column_field
from plowline_devstack.faults.plan import NO_FAULTS, FaultPlan, load_faults
from plowline_devstack.stack.lifecycle import LocalStack, start_stack
from plowline_devstack.stack.provisioning import StackConfig
from plowline_loader.bootstrap import WorkerConfig
from plowline_loader.spark.session import SparkSettings, build_spark_session
from pyspark.sql import SparkSession

DEFAULT_PLAN = Path(plowline_devstack.__file__).parent / "examples" / "faults-1pct.toml"
WARM_UP = 1_000
RETRY = DEFAULT_RETRY.with_deadline(120)


MODES = ("streaming-inserts", "write-api-default")
_streaming_config = base._config


def _write_api_config(stack: LocalStack, root: Path, subscription: str) -> WorkerConfig:
    """bench/loader.py's config, loading through the Write API (``load.stream: default``)."""
    config = _streaming_config(stack, root, subscription)
    load = LoadMode(LoadKind.STORAGE_WRITE_API, stream=WriteStreamKind.DEFAULT)
    bigquery = dataclasses.replace(config.bigquery, load=load)
    grpc = stack.endpoints.bigquery_grpc_target
    return dataclasses.replace(config, bigquery=bigquery, bigquery_grpc_host=grpc)


def _counts(stack: LocalStack) -> tuple[int, int]:
    """Return (rows, distinct event ids) of the events table."""
    client: bigquery.Client = bigquery_client(stack.project, stack.endpoints.bigquery_url)
    table = f"`{stack.project}.{stack.dataset}.{stack.table}`"
    job = client.query(
        f"SELECT COUNT(*), COUNT(DISTINCT event_id) FROM {table}", retry=RETRY, job_retry=None
    )
    rows, distinct = next(iter(job.result(retry=RETRY, timeout=120)))
    return int(rows), int(distinct)


def _run(
    spark: SparkSession, plan: FaultPlan, name: str, events: int, max_messages: int
) -> dict[str, float]:
    """Drain ``events`` on a fresh stack with ``plan``; return the figures of one run."""
    root = base.ROOT / name
    stack = start_stack(root / "stack", StackConfig(), faults=plan)
    try:
        client = bigquery_client(stack.project, stack.endpoints.bigquery_url)
        store = BigQueryTableSchemaStore(client, stack.table_ref, 60.0, SystemClock())
        store.add_fields([column_field(k, s, sh) for k, (s, sh) in base.SCHEMAS.items()])
        base._sustained(spark, stack, base.ROOT, WARM_UP, max_messages)
        started = time.monotonic()
        steady, from_start = base._sustained(spark, stack, base.ROOT, events, max_messages)
        if steady is None:
            raise SystemExit(
                f"the {events:,}-event backlog fit one micro-batch: no steady state to"
                " measure; raise --events or lower --max-messages"
            )
        wall = time.monotonic() - started
        time.sleep(2.0)  # let in-flight retries land before counting
        rows, distinct = _counts(stack)
    finally:
        stack.stop()
    return {
        "steady": steady,
        "from_start": from_start,
        "wall": wall,
        "rows": rows,
        "distinct": distinct,
        "published": events + WARM_UP,
    }


def main() -> None:
    """Run without faults, then with ``--faults``, and print both and their ratio."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--faults",
        type=Path,
        default=DEFAULT_PLAN,
        help="fault plan for the second run (default: examples/faults-1pct.toml)",
    )
    parser.add_argument(
        "--events",
        type=int,
        default=40_000,
        help="backlog drained per run (40000: several micro-batches at the loader's default"
        " of 10,000 messages a partition; steady state needs at least two)",
    )
    parser.add_argument(
        "--max-messages",
        type=int,
        default=base.MAX_MESSAGES,
        help=f"messages per partition per micro-batch (the loader's default, {base.MAX_MESSAGES})",
    )
    parser.add_argument(
        "--mode",
        choices=MODES,
        default=MODES[0],
        help="how the loader writes: insertAll, or the Write API (load.stream default) "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=2,
        help="pairs of runs, ordered none, faults, faults, none, ... so that whatever "
        "the machine does meanwhile weighs on both alike (2)",
    )
    args = parser.parse_args()
    plan = load_faults(args.faults)
    if args.mode == "write-api-default":
        base._config = _write_api_config
    base._registry_dir(base.ROOT)
    spark = build_spark_session(SparkSettings(master="local[2]", app_name="plowline-bench"))
    runs: dict[str, list[dict[str, float]]] = {"kind": [], "faulty": []}
    order = [("kind", "faulty"), ("faulty", "kind")]
    try:
        for round_ in range(args.rounds):
            for name in order[round_ % 2]:
                chosen = NO_FAULTS if name == "kind" else plan
                tag = f"{name}-{round_}"
                runs[name].append(_run(spark, chosen, tag, args.events, args.max_messages))
    finally:
        spark.stop()
    kind = {key: statistics.median(r[key] for r in runs["kind"]) for key in runs["kind"][0]}
    faulty = {key: statistics.median(r[key] for r in runs["faulty"]) for key in runs["kind"][0]}
    print(f"faults: {args.faults} ({', '.join(plan.names())})")
    print(
        f"{args.mode}: {args.rounds} runs each, medians; "
        f"{args.events:,} events per run after {WARM_UP:,}"
    )
    print(f"{'measure':<34}  {'no faults':>12}  {'faults':>12}  {'ratio':>6}")
    for key, label in (
        ("steady", "events/s, steady state"),
        ("from_start", "events/s, from query start"),
    ):
        ratio = faulty[key] / kind[key] if kind[key] else 0.0
        print(f"{label:<34}  {kind[key]:>12,.0f}  {faulty[key]:>12,.0f}  {ratio:>6.2f}")
    for key, label in (
        ("wall", "seconds to drain the backlog"),
        ("published", "events published (warm-up + run)"),
        ("rows", "rows in the table"),
        ("distinct", "distinct event ids in the table"),
    ):
        print(f"{label:<34}  {kind[key]:>12,.1f}  {faulty[key]:>12,.1f}")
    for name in ("kind", "faulty"):
        each = ", ".join(f"{r['from_start']:,.0f}" for r in runs[name])
        print(f"events/s from query start, each {name} run: {each}")


if __name__ == "__main__":
    threading.current_thread().name = "bench"
    main()
