"""Measure the loader on a Spark standalone cluster (1 and 2 executors) against local mode.

Run: ``uv run python bench/loader_cluster.py [--events 20000] [--max-messages 1000]``.

One local stack and one standalone cluster (a master, two 1-core workers) for the whole
run. For each setup the same backlog (``--events`` enriched events, STREAMING_INSERTS,
a fresh table and subscription) is published first, then the loader is started on it:

- ``local``: ``driver.py run --master local[2]`` (a plain run, Spark in the driver's JVM);
- ``cluster-1``: ``spark-submit --master spark://… --conf spark.cores.max=1``: one executor;
- ``cluster-2``: the same with ``spark.cores.max=2``: two executors.

Printed per setup: the drain rate (events/s from the first row in the table to the last;
start-up excluded), the start-up time (start → first row), the busiest executor's share
of the events (from the driver's ``batch loaded … events_by_executor`` log lines; with two
executors it should stay near 50%, the goal being at most 60%), and CPU seconds per 1,000
events over the whole run (utime + stime of the driver's process tree and, on the
cluster, of the app's executors and their Python workers, from /proc). The figure to
watch on 2 cores is ``cluster-2 / local`` (goal >= 0.7): the overhead of running
distributed, not a speed-up.
"""

from __future__ import annotations

import argparse
import ast
import atexit
import json
import os
import re
import shutil
import signal
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
from plowline_core.event.fields import ATOMIC_COLUMNS
from plowline_core.testing.tsv import enriched_line
from plowline_devstack.stack.lifecycle import LocalStack, start_stack
from plowline_devstack.stack.provisioning import StackConfig
from plowline_devstack.stack.spark_cluster import (
    ClusterSpec,
    SparkCluster,
    python_driver,
    start_cluster,
    submit_environment,
)
from process_cpu import cpu_seconds, tree

DRIVER = Path(__file__).resolve().parents[1] / "deploy" / "docker" / "loader" / "driver.py"
_JVM = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"


@dataclass(frozen=True)
class Figures:
    """One setup's measurements."""

    setup: str
    events: int
    drain_rate: float
    startup_s: float
    cpu_s: float
    executors: int
    busiest: float  # the busiest executor's share of the events


_DRAIN_LIMIT_S = 600  # a setup that has not loaded the backlog by then is reported
_SPLIT = re.compile(r"batch loaded .*?events_by_executor=(\{[^}]*\})")


def _busiest_share(log: Path) -> float:
    """Return the largest share of the events one executor took, from the driver's log."""
    split: Counter[str] = Counter()
    for found in _SPLIT.findall(log.read_text(errors="replace")):
        split.update(ast.literal_eval(found))
    total = sum(split.values())
    return max(split.values()) / total if total else float("nan")


def _rig(stack: LocalStack, root: Path, events: int) -> tuple[Path, Path, str]:
    """Create a table and subscription, publish the backlog; return config, resolver, table."""
    name = uuid.uuid4().hex[:10]
    client = bigquery_client(stack.project, stack.endpoints.bigquery_url)
    schema = [bigquery.SchemaField.from_api_repr(column.to_api()) for column in ATOMIC_COLUMNS]
    table_ref = f"{stack.project}.{stack.dataset}.events_{name}"
    client.create_table(bigquery.Table(table_ref, schema=schema))
    endpoint, project = stack.endpoints.pubsub_target, f"projects/{stack.project}"
    topic = f"{project}/topics/in-{name}"
    publisher_client(endpoint).create_topic(request={"name": topic})
    subscriber_client(endpoint).create_subscription(
        request={"name": f"{project}/subscriptions/in-{name}", "topic": topic}
    )
    publisher = publisher_client(endpoint)
    # One event id each: BigQuery (and the local stack) drop a repeated insertId.
    lines = (enriched_line(event_id=str(uuid.uuid4())) for _ in range(events))
    futures = [publisher.publish(topic, line.encode()) for line in lines]
    for future in futures:
        future.result(timeout=120)
    config: dict[str, Any] = {
        "schema": "iglu:com.snowplowanalytics.snowplow.storage/bigquery_config/jsonschema/1-0-0",
        "data": {
            "name": "cluster bench", "id": "31b1559d-d319-4023-aaae-97698238d808",
            "projectId": stack.project, "datasetId": stack.dataset, "tableId": f"events_{name}",
            "input": f"in-{name}", "typesTopic": "types", "typesSubscription": "types-mutator",
            "badRows": "bad-rows", "failedInserts": "failed-inserts",
            "load": {"mode": "STREAMING_INSERTS", "retry": False}, "purpose": "ENRICHED_EVENTS",
        },
    }  # fmt: skip
    (root / "iglu").mkdir(parents=True)
    resolver = {
        "schema": "iglu:com.snowplowanalytics.iglu/resolver-config/jsonschema/1-0-3",
        "data": {"cacheSize": 10, "cacheTtl": 60, "repositories": [{
            "name": "empty", "priority": 0, "vendorPrefixes": [],
            "connection": {"embedded": {"path": str(root / "iglu")}},
        }]},
    }  # fmt: skip
    config_file, resolver_file = root / "config.json", root / "resolver.json"
    config_file.write_text(json.dumps(config))
    resolver_file.write_text(json.dumps(resolver))
    return config_file, resolver_file, table_ref


def _count(stack: LocalStack, table_ref: str) -> int:
    client = bigquery_client(stack.project, stack.endpoints.bigquery_url)
    row = next(iter(client.query(f"SELECT COUNT(*) AS n FROM `{table_ref}`").result()))
    return int(row["n"])


def _measure(
    setup: str, stack: LocalStack, cluster: SparkCluster, root: Path, args: argparse.Namespace
) -> Figures:
    config, resolver, table_ref = _rig(stack, root, args.events)
    loader_args = [
        "run", "--config", str(config), "--resolver", str(resolver),
        "--checkpoint", str(root / "checkpoint"), "--port", "0",
        "--max-messages", str(args.max_messages), "--partitions", "2",
    ]  # fmt: skip
    env = submit_environment({**os.environ, **stack.env(), "PLOWLINE_LOADER_LOG_JSON": "false"})
    if setup == "local":
        argv = [sys.executable, str(DRIVER), *loader_args, "--master", "local[2]"]
    else:
        conf = {
            "spark.cores.max": setup.split("-")[1],
            "spark.executor.memory": "512m",
            "spark.driver.memory": "512m",
            "spark.executor.extraJavaOptions": _JVM,
            "spark.driver.extraJavaOptions": _JVM,
        }
        argv = cluster.submit_command(DRIVER, loader_args, conf)
    with (root / "driver.log").open("wb") as log:
        process = subprocess.Popen(
            argv, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    started = time.monotonic()
    first: tuple[float, int] | None = None
    executors: set[int] = set()
    cpu_executors: dict[int, float] = {}
    while True:
        if process.poll() is not None:
            raise SystemExit(f"{setup}: the loader exited; see {root / 'driver.log'}")
        count = _count(stack, table_ref)
        now = time.monotonic()
        for pid in cluster.executor_pids():
            executors.add(pid)
            cpu_executors[pid] = cpu_seconds(tree(pid))
        if first is None and count > 0:
            first = (now, count)
        if count >= args.events:
            break
        if now - started > _DRAIN_LIMIT_S:
            raise SystemExit(
                f"{setup}: {count:,} of {args.events:,} rows in the table after"
                f" {_DRAIN_LIMIT_S} s; see {root / 'driver.log'}"
            )
        time.sleep(0.25)
    cpu = cpu_seconds(tree(process.pid)) + sum(cpu_executors.values())
    target = python_driver(process.pid, DRIVER) if setup != "local" else process.pid
    os.kill(target or process.pid, signal.SIGTERM)
    process.wait(120)
    assert first is not None
    rate = (args.events - first[1]) / max(now - first[0], 1e-6)
    busiest = _busiest_share(root / "driver.log")
    return Figures(setup, args.events, rate, first[0] - started, cpu, len(executors), busiest)


def main() -> None:
    """Run the three setups on one stack and one cluster; print the figures."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--events", type=int, default=20_000, help="backlog per setup")
    parser.add_argument("--max-messages", type=int, default=1000, help="per partition per batch")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="plowline-bench-cluster-"))
    atexit.register(shutil.rmtree, root, True)  # the stack's data and checkpoints: GBs a run
    stack = start_stack(root / "stack", StackConfig())
    cluster = start_cluster(root / "spark", ClusterSpec(workers=2, cores=1), daemon=False)
    results: list[Figures] = []
    try:
        for setup in ("local", "cluster-1", "cluster-2"):
            results.append(_measure(setup, stack, cluster, root / setup, args))
    finally:
        cluster.stop()
        stack.stop()
    local = results[0].drain_rate
    print(f"backlog {args.events} events per setup, --max-messages {args.max_messages}")
    print(f"{'setup':<10} {'executors':>9} {'events/s':>9} {'vs local':>8} "
          f"{'start-up s':>10} {'CPU s/1k ev':>11} {'busiest':>8}")  # fmt: skip
    for f in results:
        print(
            f"{f.setup:<10} {f.executors:>9} {f.drain_rate:>9.0f} {f.drain_rate / local:>8.2f} "
            f"{f.startup_s:>10.1f} {1000 * f.cpu_s / f.events:>11.2f} {f.busiest:>8.0%}"
        )


if __name__ == "__main__":
    main()
