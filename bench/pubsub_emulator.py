"""Benchmark plowline's Pub/Sub emulator with the official google-cloud-pubsub client.

The emulator runs in a subprocess (``python -m plowline_devstack.pubsub``) so its CPU is
separate from the client's. Each run creates a fresh topic and subscription, publishes N
1 KiB messages with the batching PublisherClient, then consumes them with the
streaming-pull SubscriberClient, acking each. Prints publish and consume msg/s (median of
--repeat runs) for the in-memory mode and the --data-dir (SQLite) mode.

    uv run python bench/pubsub_emulator.py [--messages 50000] [--repeat 3] [--mode both]
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Any

from google.cloud import pubsub_v1  # type: ignore[import-untyped]  # no py.typed marker
from plowline_cloud.clients import publisher_client, subscriber_client
from plowline_devstack.pubsub import wait_until_ready

PROJECT = "projects/plowline-bench"


@dataclass
class Result:
    """Median throughput of one mode."""

    mode: str
    publish: float
    consume: float


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _publish(endpoint: str, topic: str, count: int, payload: bytes) -> float:
    """Publish ``count`` messages; return msg/s."""
    client = publisher_client(
        endpoint,
        batch_settings=pubsub_v1.types.BatchSettings(
            max_messages=1000, max_bytes=4 << 20, max_latency=0.02
        ),
    )
    started = time.perf_counter()
    futures = [client.publish(topic, payload, seq=str(i)) for i in range(count)]
    ids = {f.result(timeout=300) for f in futures}
    elapsed = time.perf_counter() - started
    client.stop()
    if len(ids) != count:
        raise SystemExit(f"publish returned {len(ids)} distinct ids for {count} messages")
    return count / elapsed


def _consume(endpoint: str, subscription: str, count: int) -> float:
    """Consume and ack ``count`` messages via streaming pull; return msg/s."""
    seen: set[str] = set()
    lock, done = threading.Lock(), threading.Event()

    def callback(message: Any) -> None:
        message.ack()
        with lock:
            seen.add(message.message_id)
            if len(seen) >= count:
                done.set()

    client = subscriber_client(endpoint)
    flow = pubsub_v1.types.FlowControl(max_messages=2000, max_bytes=100 << 20)
    started = time.perf_counter()
    future = client.subscribe(subscription, callback, flow_control=flow)
    finished = done.wait(timeout=600)
    elapsed = time.perf_counter() - started
    future.cancel()
    future.result(timeout=60)
    client.close()
    if not finished:
        raise SystemExit(f"consumed only {len(seen)} of {count} messages")
    return count / elapsed


def _run_mode(mode: str, count: int, repeat: int) -> Result:
    port = _free_port()
    with tempfile.TemporaryDirectory(prefix="pubsub-bench-") as data_dir:
        command = [sys.executable, "-m", "plowline_devstack.pubsub", "--host", "127.0.0.1",
                   "--port", str(port), "--log-level", "warning"]  # fmt: skip
        if mode == "sqlite":
            command += ["--data-dir", data_dir]
        server = subprocess.Popen(command)
        try:
            wait_until_ready("127.0.0.1", port, timeout=60)
            endpoint = f"127.0.0.1:{port}"
            admin = publisher_client(endpoint)
            subs = subscriber_client(endpoint)
            payload = os.urandom(512).hex().encode()  # 1 KiB
            publish, consume = [], []
            for run in range(repeat):
                topic = admin.create_topic(name=f"{PROJECT}/topics/bench-{run}").name
                sub = subs.create_subscription(
                    name=f"{PROJECT}/subscriptions/bench-{run}",
                    topic=topic,
                    ack_deadline_seconds=60,
                ).name
                publish.append(_publish(endpoint, topic, count, payload))
                consume.append(_consume(endpoint, sub, count))
                print(f"  {mode} run {run + 1}: publish {publish[-1]:,.0f} msg/s, "
                      f"consume {consume[-1]:,.0f} msg/s", flush=True)  # fmt: skip
            subs.close()
            admin.transport.close()
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=60)
    return Result(mode, statistics.median(publish), statistics.median(consume))


def main() -> None:
    """Parse arguments, run each mode, print the table."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--messages", type=int, default=50_000, help="messages per run (default: %(default)s)"
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="runs per mode; the median is reported (default: %(default)s)",
    )
    parser.add_argument("--mode", choices=("memory", "sqlite", "both"), default="both",
                        help="storage mode(s) to measure (default: %(default)s)")  # fmt: skip
    args = parser.parse_args()
    modes = ("memory", "sqlite") if args.mode == "both" else (args.mode,)
    results = [_run_mode(mode, args.messages, args.repeat) for mode in modes]
    print(f"\n{args.messages:,} x 1 KiB messages, median of {args.repeat} run(s)")
    print(f"{'mode':<8} {'publish msg/s':>14} {'consume msg/s':>14}")
    for r in results:
        print(f"{r.mode:<8} {r.publish:>14,.0f} {r.consume:>14,.0f}")


if __name__ == "__main__":
    main()
