"""``plowline dev up | status | down | env``: the local stack from the command line.

``up`` starts the three stand-ins as daemons (or reuses the ones still answering),
provisions them and prints ``export`` lines on stdout (so ``eval "$(plowline dev up)"``
works); progress and the elapsed time go to stderr. State, logs and data live in the data
directory (default ``.plowline/`` in the current directory). ``up --workers N`` also
starts a Spark standalone cluster (a master and N one-core workers, ``stack/spark_cluster.py``)
and exports its URL as ``PLOWLINE_SPARK_MASTER``; ``down`` stops it with the stack.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from plowline_cloud.logging import configure_logging
from plowline_core.errors import PlowlineError

from plowline_devstack.cli import Command
from plowline_devstack.faults.catalogue import describe
from plowline_devstack.faults.plan import load_faults
from plowline_devstack.stack import lifecycle
from plowline_devstack.stack.config import load_stack
from plowline_devstack.stack.spark_cluster import (
    ClusterSpec,
    SparkCluster,
    read_cluster,
    start_cluster,
)

DEFAULT_DATA_DIR = Path(".plowline")
SPARK_DIR = "spark"
"""The cluster's directory (state, daemon logs, work dirs) inside the data directory."""


def _data_dir_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=DEFAULT_DATA_DIR,
        help="directory for the state file, server logs and data (default: %(default)s)",
    )


def _configure_up(parser: argparse.ArgumentParser) -> None:
    _data_dir_option(parser)
    parser.add_argument(
        "--config",
        metavar="PATH|BASE64",
        help="what to provision: a Snowplow config (0.x bigquery_config JSON or 1.x HOCON, a path "
        "or base64: its topics, subscriptions, dataset and table, plus the repeater's and "
        "dead-letter writer's subscriptions), or a provisioning file (JSON or TOML: project, "
        "dataset, table, topics, subscriptions, buckets; see plowline_devstack.stack.config). "
        "Default: project plowline-local, dataset snowplow, table events",
    )
    parser.add_argument(
        "--faults",
        type=Path,
        metavar="FILE",
        help="make the stand-ins fail as Google's services can (TOML or JSON; e.g. "
        "[pubsub.duplicate-delivery] rate = 0.01); format and catalogue in "
        "plowline_devstack/faults/plan.py. Servers whose faults change are restarted; without "
        "--faults a running stack keeps the faults it has (default on a new stack: none)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=30.0,
        help="seconds to wait for each server (default: %(default)s)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=0,
        metavar="N",
        help="also start a Spark standalone cluster on 127.0.0.1: a master and N workers of "
        "1 core each (0, the default: none); submit the loader to it with "
        "`spark-submit --master $PLOWLINE_SPARK_MASTER deploy/docker/loader/driver.py run ...`",
    )


def _up(args: argparse.Namespace) -> int:
    started = time.monotonic()
    configure_logging("devstack", json=False)  # stderr: stdout holds only the exports
    try:
        config, roles = load_stack(args.config) if args.config else (None, [])
        faults = load_faults(args.faults) if args.faults else None
        running = lifecycle.up(args.data_dir, config, timeout=args.timeout, faults=faults)
        cluster = _cluster_up(args.data_dir / SPARK_DIR, args.workers)
    except PlowlineError as exc:
        print(f"plowline dev up failed: {exc}", file=sys.stderr)
        return 1
    for server in running.servers.values():
        verb = "reused " if server.name in running.reused else "started"
        ports = ", ".join(f"{k}={v}" for k, v in server.ports.items())
        print(
            f"{verb} {server.name:<8} pid {server.pid:<7} {ports}  log {server.log}",
            file=sys.stderr,
        )
    for line in roles:
        print(f"provisioned: {line}", file=sys.stderr)
    if running.faults.faults:
        print(f"faults on: {', '.join(running.faults.names())}", file=sys.stderr)
    print(running.endpoints.exports())
    if cluster is not None:
        print(
            f"spark    master {cluster.master_url}, {len(cluster.worker_pids)} workers"
            f"  logs {cluster.directory}",
            file=sys.stderr,
        )
        print(f"export PLOWLINE_SPARK_MASTER={cluster.master_url}")
    print(f"local stack up and provisioned in {time.monotonic() - started:.2f} s", file=sys.stderr)
    return 0


def _cluster_up(directory: Path, workers: int) -> SparkCluster | None:
    """Return the recorded cluster if it still runs with ``workers`` workers, else start one."""
    if workers <= 0:
        return None
    running = read_cluster(directory)
    if running is not None and running.alive() and len(running.worker_pids) == workers:
        return running
    if running is not None:
        running.stop()
    return start_cluster(directory, ClusterSpec(workers=workers), daemon=True)


def _status(args: argparse.Namespace) -> int:
    running = lifecycle.read_state(args.data_dir)
    if running is None:
        print(f"no local stack recorded in {args.data_dir}", file=sys.stderr)
        return 1
    healthy = True
    for status in running.status():
        ports = ", ".join(f"{k}={v}" for k, v in status.ports.items())
        state = (
            "answers"
            if status.answers
            else ("running, not answering" if status.alive else "not running")
        )
        healthy = healthy and status.answers
        print(f"{status.name:<8} pid {status.pid:<7} {ports:<28} {state}")
    cluster = read_cluster(args.data_dir / SPARK_DIR)
    if cluster is not None:
        state = "running" if cluster.alive() else "not running"
        print(f"spark    master {cluster.master_url}, {len(cluster.worker_pids)} workers: {state}")
        healthy = healthy and cluster.alive()
    return 0 if healthy else 1


def _down(args: argparse.Namespace) -> int:
    cluster = read_cluster(args.data_dir / SPARK_DIR)
    if cluster is not None:
        cluster.stop(grace=args.grace)
        print(f"stopped spark cluster {cluster.master_url}")
    stopped = lifecycle.down(args.data_dir, grace=args.grace)
    if stopped is None:
        print(f"no local stack recorded in {args.data_dir}", file=sys.stderr)
        return 0
    for server in stopped.servers.values():
        print(f"stopped {server.name} (pid {server.pid})")
    return 0


def _configure_down(parser: argparse.ArgumentParser) -> None:
    _data_dir_option(parser)
    parser.add_argument(
        "--grace",
        type=float,
        default=5.0,
        help="seconds between SIGTERM and SIGKILL (default: %(default)s)",
    )


def _env(args: argparse.Namespace) -> int:
    running = lifecycle.read_state(args.data_dir)
    if running is None:
        print(f"no local stack recorded in {args.data_dir}; run `plowline dev up`", file=sys.stderr)
        return 1
    print(running.endpoints.exports())
    cluster = read_cluster(args.data_dir / SPARK_DIR)
    if cluster is not None:
        print(f"export PLOWLINE_SPARK_MASTER={cluster.master_url}")
    return 0


def _faults(args: argparse.Namespace) -> int:
    print(describe())
    return 0


COMMANDS = (
    Command(
        ("dev", "up"),
        "start (or reuse) the local stack (and with --workers N a Spark cluster), provision it "
        "and print its exports",
        _up,
        _configure_up,
        description="Start the Pub/Sub, BigQuery and Cloud Storage stand-ins as background processes on free "
        "loopback ports (reusing those still answering), provision topics, subscriptions, dataset, events "
        'table and buckets, and print `export` lines on stdout: eval "$(plowline dev up)".',
    ),
    Command(
        ("dev", "status"),
        "show each server's pid, ports and whether it answers",
        _status,
        _data_dir_option,
    ),
    Command(
        ("dev", "down"),
        "stop the local stack (SIGTERM, then SIGKILL after a grace period)",
        _down,
        _configure_down,
    ),
    Command(
        ("dev", "faults"),
        "list the faults `plowline dev up --faults FILE` can turn on, with their parameters",
        _faults,
    ),
    Command(
        ("dev", "env"),
        "print the `export` lines that point services at the running stack",
        _env,
        _data_dir_option,
    ),
)
