"""Where one loader task's CPU goes: a partition's work in this process, against the local stack.

Run: ``uv run python bench/partition_cpu.py [--events 10000] [--rounds 3]``

A Spark task of the loader pulls a partition's messages, transforms them chunk by chunk
while a second thread writes the chunk before (``partition.process_in_chunks``), acks,
and reports. Here the same function (``StreamingPartition``) runs in this process over a
subscription of the local stack, as a reused Python worker runs it (one warm-up task
first, so the second task freezes the heap as in a worker), and the CPU is split:

- ``task``: this process's CPU per event over the task (every thread);
- ``prepare``: the transforming thread's CPU per event inside ``BatchProcessor.prepare``;
- ``bare``: ``prepare`` over the same lines, already in memory, one chunk at a time,
  nothing else running (no pull, no deliver thread, no rows held);
- ``gc``: the collector's time per event during the task, by generation (it runs in
  whichever thread allocates, so it is inside ``prepare``'s figure too).

Variants (``--variants``), each measured in every round, in turn: ``as-is`` (the code
as it is); ``inline`` (``deliver`` in the same thread: no thread switching); ``no-gc``
(collector off during the task: what the collector costs); ``gc=N`` (the task's
young-generation threshold ``N``, ``spark.worker_heap.TASK_GC_THRESHOLD``; Python's is 700).
``cyclic`` is the garbage the full collection after the task found (pyspark's daemon
runs one after every task): objects that only the collector could free. Figures are
medians.
"""

from __future__ import annotations

import argparse
import atexit
import gc
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import Future
from dataclasses import replace
from itertools import chain
from pathlib import Path
from typing import Any

from plowline_devstack.stack.lifecycle import start_stack
from plowline_devstack.stack.provisioning import StackConfig
from plowline_loader import partition as partition_module
from plowline_loader.batch.message import InboundMessage
from plowline_loader.batch.processor import BatchProcessor
from plowline_loader.bootstrap import WorkerConfig, processor_for, task_processor
from plowline_loader.partition import StreamingPartition
from plowline_loader.source.pulls import PubSubPartition, pull_bounded
from plowline_loader.spark import worker_heap

sys.path.insert(0, str(Path(__file__).parent))
from loader_cpu import _publish, _rig, _transform_us, _worker_config
from transform import build_lines

VARIANTS = ("as-is", "inline", "no-gc", "gc=700")


class _GcClock:
    """Time spent in the collector, by generation (``gc.callbacks``)."""

    def __init__(self) -> None:
        self.seconds: Counter[int] = Counter()
        self.count: Counter[int] = Counter()
        self._started = 0.0
        gc.callbacks.append(self._on)

    def reset(self) -> None:
        self.seconds.clear()
        self.count.clear()

    def _on(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.seconds[info["generation"]] += time.perf_counter() - self._started
            self.count[info["generation"]] += 1


class _PrepareClock:
    """Thread CPU spent in ``BatchProcessor.prepare`` (wrapped for the run)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        original = BatchProcessor.prepare

        def timed(processor: BatchProcessor, messages: Any) -> Any:
            started = time.thread_time()
            try:
                return original(processor, messages)
            finally:
                self.seconds += time.thread_time() - started

        BatchProcessor.prepare = timed  # type: ignore[method-assign]


class _InlinePool:
    """A stand-in for the deliver thread's pool that runs ``deliver`` at once, in this thread."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __enter__(self) -> _InlinePool:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def submit(self, function: Any, *args: Any) -> Future[Any]:
        future: Future[Any] = Future()
        try:
            future.set_result(function(*args))
        except BaseException as error:  # handed over as the pool would
            future.set_exception(error)
        return future


def _task(config: WorkerConfig, subscription: str, host: str, events: int, variant: str) -> None:
    """Run one task of ``events`` messages as a loader's Python worker runs it."""
    partition = PubSubPartition(0, subscription, host, events, 64 << 20, 1.0, 60)
    rows = chain.from_iterable(pull_bounded(partition))  # as the processing source reads
    pool = partition_module.ThreadPoolExecutor
    if variant == "inline":
        partition_module.ThreadPoolExecutor = _InlinePool  # type: ignore[misc,assignment]
    if variant == "no-gc":
        gc.disable()
    threshold = worker_heap.TASK_GC_THRESHOLD
    if variant.startswith("gc="):
        worker_heap.TASK_GC_THRESHOLD = int(variant[3:])
    try:
        task = StreamingPartition(replace(config, pubsub_emulator_host=host), task_processor)
        reports = list(task([rows]))  # one round
    finally:
        gc.enable()
        partition_module.ThreadPoolExecutor = pool  # type: ignore[misc]
        worker_heap.TASK_GC_THRESHOLD = threshold
    assert reports[0].outcome.events_in == events, reports


def _bare(config: WorkerConfig, lines: list[str]) -> float:
    """Return ``prepare``'s thread CPU-µs per line over lines in memory, chunk by chunk."""
    processor = processor_for(config)
    messages = [InboundMessage(line.encode(), str(n)) for n, line in enumerate(lines)]
    started = time.thread_time()
    for start in range(0, len(messages), 500):
        processor.prepare(messages[start : start + 500])
    return (time.thread_time() - started) * 1e6 / len(lines)


def main() -> None:
    """Run the rounds and print the medians."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--events", type=int, default=10_000, help="messages a task (10000)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds; medians (3)")
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated")
    args = parser.parse_args()
    variants = args.variants.split(",")
    root = Path(tempfile.mkdtemp(prefix="plowline-bench-partition-"))
    atexit.register(shutil.rmtree, root, True)  # the stack's data and checkpoints: GBs a run
    stack = start_stack(root / "stack", StackConfig())
    os.environ.update(stack.env())
    figures: dict[str, list[dict[str, float]]] = {v: [] for v in variants}
    try:
        config_file, resolver_file, _, topic = _rig(stack, root / "rig")
        subscription = topic.replace("/topics/", "/subscriptions/")
        config = _worker_config(config_file, resolver_file)
        host = stack.endpoints.pubsub_target
        _publish(stack, topic, build_lines(2000, 1))
        _task(config, subscription, host, 2000, "as-is")  # the worker's first task
        gc_clock, prepare_clock = _GcClock(), _PrepareClock()
        for number in range(args.rounds):
            for variant in variants:
                lines = build_lines(args.events, 100 + number)
                _publish(stack, topic, lines)
                gc_clock.reset()
                prepare_clock.seconds = 0.0
                cpu = time.process_time()
                _task(config, subscription, host, args.events, variant)
                task = time.process_time() - cpu
                n = args.events
                row: dict[str, float] = {
                    "task": task * 1e6 / n,
                    "prepare": prepare_clock.seconds * 1e6 / n,
                    "gc": sum(gc_clock.seconds.values()) * 1e6 / n,
                    **{f"gc{g}": gc_clock.seconds[g] * 1e6 / n for g in range(3)},
                    **{f"gc{g} runs": gc_clock.count[g] for g in range(3)},
                }
                row["cyclic"] = gc.collect()  # as pyspark's daemon does after every task
                row |= {
                    "bare": _bare(config, lines),
                    "bench bare": _transform_us(config, lines),
                }
                figures[variant].append(row)
                text = ", ".join(f"{k} {v:.1f}" for k, v in row.items())
                print(f"  round {number + 1} {variant}: µs/event {text}", flush=True)
    finally:
        stack.stop()
    print(f"medians over {args.rounds} rounds, {args.events:,} events a task (µs/event)")
    for variant, rows in figures.items():
        medians = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
        print(f"  {variant:<8} " + ", ".join(f"{k} {v:6.1f}" for k, v in medians.items()))


if __name__ == "__main__":
    main()
