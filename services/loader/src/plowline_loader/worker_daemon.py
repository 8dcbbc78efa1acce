"""The executors' Python worker daemon: pyspark's, with the workers' own imports done before it forks.

Spark starts one daemon per executor (``spark.python.daemon.module``, set by
``spark.spark_conf``) and asks it for a worker per concurrent task; the daemon forks
one, and the fork imports ``pyspark.worker``, then unpickles the task's function, which
imports the loader (the source, the partition function, the transform). Every fork did
those imports again: ~0.3 CPU-s per worker before its first task (issue 17). Here the
daemon imports them once, before its first fork, and every worker starts with them.

Notes:
    Nothing that starts a thread or holds a connection may be imported before a fork
    (pyspark's own daemon says so): gRPC (the Google clients) is not fork-safe, and
    numpy and pyarrow start native threads at import (OpenBLAS, jemalloc). So
    ``PRELOADED`` names pure-Python modules only, and the workers import the rest after
    the fork, when they build their clients (``bootstrap.processor_for``). A unit test
    holds ``PRELOADED`` to that (none of gRPC, numpy, pyarrow, pandas loaded; one thread).
    The daemon itself is pyspark's (``pyspark.daemon.manager``); the worker module it
    is given (``pyspark.worker``) is unchanged.
"""

from __future__ import annotations

import importlib

PRELOADED = (
    "pyspark.worker",
    "plowline_loader.source.processing",
    "plowline_loader.partition",
)
"""What every worker imports before its first task, in the order the daemon imports it."""


def preload() -> None:
    """Import the workers' modules in this (not yet forking) process."""
    for name in PRELOADED:
        importlib.import_module(name)


def main() -> None:
    """Preload, then run pyspark's daemon (it forks the workers)."""
    preload()
    from pyspark.daemon import manager

    manager()


if __name__ == "__main__":
    main()
