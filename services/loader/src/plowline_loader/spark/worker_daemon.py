"""The executors' Python worker daemon: pyspark's, with the workers' own imports done before it forks.

Spark starts one daemon per executor (``spark.python.daemon.module``, set by
``spark.spark_conf``) and asks it for a worker per concurrent task; the daemon forks
one, and the fork imports ``pyspark.worker``, then unpickles the task's function, which
imports the loader (the source, the partition function, the transform), and builds its
processor, which imports the Google clients (BigQuery pulls in pandas and pyarrow,
Pub/Sub gRPC). Every fork did those imports again: ~0.3 CPU-s per worker for the loader,
~0.5 more for the clients, before its first task. Here the daemon imports them
once, before its first fork, and every worker starts with them.

Notes:
    Nothing may run a thread or hold a connection when the daemon forks (pyspark's own
    daemon says so: a fork copies one thread, and whatever the others held stays locked
    in the child). Imports alone do not, with two exceptions turned off here before any
    import (``QUIET_IMPORTS``, whatever the environment says): NumPy's OpenBLAS
    starts its thread pool at import, and pyarrow's bundled jemalloc its background
    thread (pyarrow allocates with mimalloc by default; jemalloc is only initialised).
    gRPC starts nothing until a channel is made, and channels are made after the fork,
    when a worker builds its clients (``bootstrap.processor_for``): gRPC's own
    documentation names that order ("use after fork") as the safe one. A unit test holds
    the preload to this (the clients' modules loaded, one thread).
    The daemon itself is pyspark's (``pyspark.daemon.manager``); the worker module it
    is given (``pyspark.worker``) is unchanged.
"""

from __future__ import annotations

import importlib
import os

PRELOADED = (
    "pyspark.worker",
    "plowline_loader.source.processing",
    "plowline_loader.partition",
    "plowline_cloud.pubsub.subscription",
    "plowline_cloud.clients",
    "plowline_cloud.pubsub.publisher",
    "plowline_cloud.table_schema",
    "plowline_cloud.write_api_pending",
    "plowline_cloud.bigquery",
    "plowline_cloud.sinks",
    "plowline_cloud.write_api",
)
"""What every worker imports before its first task, in the order the daemon imports it."""

QUIET_IMPORTS = {
    "OPENBLAS_NUM_THREADS": "1",
    "JE_ARROW_MALLOC_CONF": "background_thread:false",
}
"""Environment that keeps the preloaded imports from starting threads (see the notes)."""


def preload() -> None:
    """Import the workers' modules in this (not yet forking) process, starting no thread."""
    for name, value in QUIET_IMPORTS.items():
        os.environ[name] = value  # not a preference: a thread at fork time is a bug
    for name in PRELOADED:
        importlib.import_module(name)


def main() -> None:
    """Preload, then run pyspark's daemon (it forks the workers)."""
    preload()
    from pyspark.daemon import manager

    manager()


if __name__ == "__main__":
    main()
