"""What the loader's deliver path costs per event, by piece, in one thread (no Spark).

Run: ``uv run python bench/deliver.py [--events 20000] [--repeat 5] [--profile]``

Starts the local stack, creates loader_cpu.py's table and topics, builds the loader's
``BatchProcessor`` as a Python worker does (``bootstrap.build_processor``: the real
BigQuery and Pub/Sub clients), and runs the mix of bench/transform.py (~10% bad lines)
through it in chunks of ``CHUNK_MESSAGES``: ``prepare`` (the transform) then ``deliver``
(types, insertAll, bad rows), one after the other in this thread. Printed: this thread's
CPU-µs per event of ``prepare`` and of ``deliver``, and of the pieces of ``deliver``
measured apart on the same rows (the field check, the request encoding, one insertAll,
one bad-row publish); medians of ``--repeat`` passes, each with a fresh insertId set.
``--profile`` adds a cProfile of ``deliver`` (top functions by own time).

Another checkout's figures: run this file with its venv's python
(``/work/base/.venv/bin/python bench/deliver.py``); the pieces it lacks are measured as
that checkout does them.

Not the loader as a user runs it (loader_cpu.py measures that): the piece figures say
where the deliver thread's CPU goes, and compare two versions of one piece.
"""

from __future__ import annotations

import argparse
import atexit
import cProfile
import os
import pstats
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from plowline_cloud.row_sink import MAX_REQUEST_BYTES, encoded_entry, request_body
from plowline_core.ports import Row
from plowline_core.schema.widening import missing_fields
from plowline_devstack.stack.lifecycle import start_stack
from plowline_devstack.stack.provisioning import StackConfig
from plowline_loader.batch.message import InboundMessage
from plowline_loader.batch.processor import BatchProcessor, PreparedBatch
from plowline_loader.bootstrap import build_processor
from plowline_loader.partition import CHUNK_MESSAGES

sys.path.insert(0, str(Path(__file__).parent))
from loader_cpu import _rig, _worker_config
from transform import build_lines


def _cpu_us(work: Callable[[], object], events: int) -> float:
    started = time.thread_time()
    work()
    return (time.thread_time() - started) * 1e6 / events


def _body(rows: list[Row]) -> bytes | None:
    """Encode one request's body as the sink does (row by row in a checkout without one pass)."""
    try:
        from plowline_cloud.row_sink import whole_request_body
    except ImportError:  # --baseline: an older checkout
        return request_body([encoded_entry(row) for row in rows])
    return whole_request_body(rows, MAX_REQUEST_BYTES)


def _messages(lines: list[str]) -> list[list[InboundMessage]]:
    """Return the lines as chunks of messages, each with a fresh id (a fresh insertId set)."""
    messages = [InboundMessage(line.encode(), uuid.uuid4().hex) for line in lines]
    return [messages[i : i + CHUNK_MESSAGES] for i in range(0, len(messages), CHUNK_MESSAGES)]


def _pass(processor: BatchProcessor, lines: list[str]) -> dict[str, float]:
    """Run one pass over the lines; return CPU-µs per event by piece."""
    chunks = _messages(lines)
    prepared: list[PreparedBatch] = []
    figures = {
        "prepare": _cpu_us(lambda: prepared.extend(map(processor.prepare, chunks)), len(lines))
    }
    figures["deliver"] = _cpu_us(lambda: [processor.deliver(p) for p in prepared], len(lines))
    # The pieces, apart, on the same rows (the rows were inserted above: same insertIds,
    # which BigQuery deduplicates; bqemulator stores them again, at the same cost).
    rows = [[Row(good.row.insert_id, good.row.data) for good in p.batch.goods] for p in prepared]
    bads = [p.batch.bad_rows for p in prepared if p.batch.bad_rows]
    to = processor._to
    fields = to.schema.fields()
    figures["  field check"] = _cpu_us(
        lambda: [missing_fields(fields, row.data) for chunk in rows for row in chunk], len(lines)
    )
    figures["  encoding"] = _cpu_us(lambda: [_body(chunk) for chunk in rows], len(lines))
    figures["  insert (all of it)"] = _cpu_us(
        lambda: [to.table.insert(c) for c in rows], len(lines)
    )
    figures["  bad-row publish"] = _cpu_us(
        lambda: [to.bad_rows.publish(b) for b in bads], len(lines)
    )
    return figures


def main() -> None:
    """Start the stack, build the processor, run the passes and print the medians."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--events", type=int, default=20_000, help="events per pass (20000)")
    parser.add_argument("--repeat", type=int, default=5, help="passes; medians (5)")
    parser.add_argument("--profile", action="store_true", help="add a cProfile of deliver")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="plowline-bench-deliver-"))
    atexit.register(shutil.rmtree, root, True)  # the stack's data and checkpoints: GBs a run
    stack = start_stack(root / "stack", StackConfig())
    try:
        os.environ.update(stack.env())
        config_file, resolver_file, _, _ = _rig(stack, root / "rig")
        processor = build_processor(_worker_config(config_file, resolver_file))
        lines = build_lines(args.events, seed=1)
        _pass(processor, lines[:2000])  # warm: resolver, casters, connections, schema
        passes = [_pass(processor, lines) for _ in range(args.repeat)]
        print(f"deliver path: {args.events:,} events a pass, median of {args.repeat} passes")
        for piece in passes[0]:
            median = statistics.median(figures[piece] for figures in passes)
            print(f"  {piece:<24} {median:7.2f} CPU-µs/event")
        if args.profile:
            chunks = [processor.prepare(chunk) for chunk in _messages(lines)]
            profile = cProfile.Profile()
            profile.runcall(lambda: [processor.deliver(p) for p in chunks])
            pstats.Stats(profile).sort_stats("tottime").print_stats(30)
    finally:
        stack.stop()


if __name__ == "__main__":
    main()
