"""Measure messages/s from the Pub/Sub emulator through the Spark source's read() and the ack sink.

Run: ``uv run python bench/spark_source.py [--messages 20000] [--size 1024] [--runs 3]``.
The emulator runs as its own process (as in production, the broker does not share our GIL);
Spark is local[2] and warmed by one micro-batch before measuring. Each run publishes the
backlog first (not timed), then times one query from start until processAllAvailable()
returns with every message acked. Prints each run and the medians of two rates: end to end
(query start included: a new query spawns Spark's driver-side Python reader process) and
in batches (rows over the summed ``triggerExecution`` time: pull, read, process, ack, WAL).
"""

from __future__ import annotations

import argparse
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Collection, Iterable

from plowline_cloud.clients import publisher_client, subscriber_client
from plowline_devstack.pubsub import wait_until_ready
from plowline_loader.source.acking import AckingPartition, PartitionProcessor
from plowline_loader.spark.session import SparkSettings, build_spark_session
from pyspark.sql import DataFrame, Row, SparkSession

PROJECT = "projects/plowline-bench"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def acking_batch_writer(
    process: PartitionProcessor[Row], *, emulator_host: str | None = None
) -> Callable[[DataFrame, int], None]:
    """Return a ``foreachBatch`` function that runs ``AckingPartition`` on every partition.

    The loader itself runs ``AckingPartition`` inside its tasks (``partition``); this
    drives the source and the acking alone. One action on the micro-batch: a second
    would run the source's ``read()`` again and pull other messages.
    """
    acking = AckingPartition[Row](process, emulator_host)

    def settle(rows: Iterable[Row]) -> None:
        acking(rows)  # foreachPartition wants a function returning nothing

    def write_batch(frame: DataFrame, batch_id: int) -> None:
        frame.foreachPartition(settle)

    return write_batch


def _discard(rows: list[Row]) -> Collection[str] | None:
    """Touch every payload and declare the partition durable (read + ack cost only)."""
    sum(len(row["data"]) for row in rows)
    return None


def _channel(endpoint: str) -> tuple[str, str]:
    name = uuid.uuid4().hex[:10]
    topic, subscription = f"{PROJECT}/topics/t-{name}", f"{PROJECT}/subscriptions/s-{name}"
    publisher_client(endpoint).create_topic(request={"name": topic})
    subscriber_client(endpoint).create_subscription(
        request={"name": subscription, "topic": topic, "ack_deadline_seconds": 60}
    )
    return topic, subscription


def _publish(endpoint: str, topic: str, count: int, size: int) -> None:
    publisher = publisher_client(endpoint)
    payload = b"x" * size
    futures = [publisher.publish(topic, payload) for _ in range(count)]
    for future in futures:
        future.result(timeout=60)


def _run(
    spark: SparkSession, endpoint: str, count: int, size: int, partitions: int
) -> tuple[float, float]:
    """Drain a fresh backlog of ``count`` messages; return (end-to-end, in-batch) msg/s."""
    topic, subscription = _channel(endpoint)
    _publish(endpoint, topic, count, size)
    with tempfile.TemporaryDirectory() as checkpoint:
        started = time.perf_counter()
        query = (
            spark.readStream.format("pubsub")
            .option("subscription", subscription)
            .option("emulatorHost", endpoint)
            .option("numPartitions", str(partitions))
            .option("maxMessagesPerPartition", "5000")
            .option("pullTimeoutSeconds", "0.5")
            .load()
            .writeStream.foreachBatch(acking_batch_writer(_discard, emulator_host=endpoint))
            .option("checkpointLocation", checkpoint)
            .start()
        )
        try:
            query.processAllAvailable()
            elapsed = time.perf_counter() - started
        finally:
            query.stop()
    batches = [p for p in query.recentProgress if p["numInputRows"] > 0]
    rows = sum(p["numInputRows"] for p in batches)
    in_batch_s = sum(p["durationMs"]["triggerExecution"] for p in batches) / 1000
    print(
        f"  {rows} msgs of {size} B: query start to drained {elapsed:.2f} s "
        f"= {rows / elapsed:,.0f} msg/s; inside {len(batches)} batches {in_batch_s:.2f} s "
        f"= {rows / in_batch_s:,.0f} msg/s"
    )
    return rows / elapsed, rows / in_batch_s


def main() -> None:
    """Start the emulator and Spark, warm up, then print messages/s (median of runs)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=20_000, help="messages per run")
    parser.add_argument("--size", type=int, default=1024, help="bytes per message")
    parser.add_argument("--runs", type=int, default=3, help="timed runs; median shown")
    parser.add_argument("--partitions", type=int, default=2, help="Spark partitions per batch")
    args = parser.parse_args()

    port = _free_port()
    emulator = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "plowline_devstack.pubsub",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"127.0.0.1:{port}"
    try:
        wait_until_ready("127.0.0.1", port, timeout=20)
        started = time.perf_counter()
        spark = build_spark_session(SparkSettings(app_name="plowline-bench-source"))
        print(f"spark session: {time.perf_counter() - started:.1f} s")
        started = time.perf_counter()
        _run(spark, endpoint, 100, args.size, args.partitions)
        print(f"warm-up query: {time.perf_counter() - started:.1f} s")
        runs = [
            _run(spark, endpoint, args.messages, args.size, args.partitions)
            for _ in range(args.runs)
        ]
        print(
            f"pubsub source read()+ack, median of {args.runs} ({args.partitions} partitions, "
            f"local[2]): end to end {statistics.median(r[0] for r in runs):,.0f} msg/s "
            f"(incl. ~3 s query start), in batches {statistics.median(r[1] for r in runs):,.0f} msg/s"
        )
        spark.stop()
    finally:
        emulator.terminate()
        emulator.wait(timeout=10)


if __name__ == "__main__":
    main()
