"""The Python worker's heap: frozen once the worker is warm, collected seldom while a task runs.

Why (CPU per event): pyspark's daemon runs a full ``gc.collect()`` after every
task of a reused worker, and a full collection walks every object the worker holds:
the imported modules, the Google clients, schemas and casters (a third of the
worker's CPU at 5,000 messages a task). So the second task a worker runs starts by
freezing what is alive (``freeze_worker_heap``): what the first task built lives as
long as the worker, and the collector stops walking it. Nothing of a task's messages
is alive then (the rows are pulled after it, the last task's were released).
While a task runs, the young generation is collected every ``TASK_GC_THRESHOLD`` net
allocations instead of Python's 700 (``task_collector``): a task holds its messages
and a chunk or two of rows, tens of thousands of containers, so at 700 the collector
walked them again and again (146 young and 13 middle collections in a 10,000-message
task, 3-5 CPU-µs an event, bench/partition_cpu.py). Nothing a task builds needs the
collector to die (no reference cycles per message), and the daemon collects fully
after every task anyway.

Notes:
    Tied to pyspark's daemon (``spark.worker_daemon``): it forks one worker per task slot
    and collects fully after every task of a reused worker.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from contextlib import contextmanager

TASK_GC_THRESHOLD = 50_000
"""Net container allocations between young-generation collections while a task runs."""


_tasks_started: dict[int, int] = {}  # pid: tasks this process has started


def freeze_worker_heap() -> bool:
    """At the start of this process's second task, freeze the objects alive; say if it did.

    Notes:
        ``gc.freeze`` moves every tracked object to a generation the collector never
        walks (a cycle among them is never reclaimed: they are the worker's long-lived
        clients and caches). Keyed by pid: a forked worker counts its own tasks.
    """
    pid = os.getpid()
    started = _tasks_started.get(pid, 0)
    _tasks_started[pid] = started + 1
    if started != 1:
        return False
    gc.freeze()
    return True


@contextmanager
def task_collector(threshold: int) -> Iterator[None]:
    """Collect the young generation every ``threshold`` net allocations until the block ends.

    Notes:
        The older generations keep their ratios (each is collected once per that many
        collections of the one below); the thresholds before are restored on any exit.
    """
    before = gc.get_threshold()
    gc.set_threshold(threshold, *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)
