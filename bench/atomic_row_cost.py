"""What the row's atomic values cost as Python objects: built, encoded and freed, per row.

Run: ``uv run python bench/atomic_row_cost.py [--lines 20000] [--seed 7] [--chunk 500]
[--repeat 5]``.

Issue 30 names a remedy for the loader's CPU: a decoder that writes the insertAll JSON of
the atomic fields straight from the TSV, so that the row never holds them as ~40 Python
objects. This bench prices what such a decoder could save. Over the good lines of
``bench/transform.py``'s mix it times, per row, in chunks of ``--chunk`` rows held alive
together as a loader task holds them (freed when the next chunk comes):

- ``decode``: the C line decoder (``decode_valid_line``): the atomic values as a dict;
- ``decode + encode``: the same, then ``orjson.dumps`` of the atomic values;
- ``bytes only``: ``line.encode()``, a lower bound for any path that keeps one bytes object.

Printed: CPU-µs a row (process time, median of ``--repeat``). The saving of the wire-format
decoder is at most ``decode + encode`` minus what it must still do to check every value's
shape (about the ``decode`` figure less the objects it builds).

Notes:
    glibc returns the top of its heap to the system when more than 128 KiB of it is free
    (``M_TRIM_THRESHOLD``). A bench that holds nothing else frees each chunk's encoded rows
    (1.2 KB each, beyond pymalloc's 512-byte objects) and gets trimmed after every chunk:
    the next chunk page-faults its memory back, and ``decode + encode`` costs 8 to 9 µs a row
    instead of 3.4. A loader task holds far more (the pulled messages, the client's
    buffers) and is not trimmed that way: ``bench/partition_cpu.py`` gives the same task
    CPU with and without ``MALLOC_TRIM_THRESHOLD_`` set (37.6 µs an event both, 2026-11-28).
    So this bench turns trimming off (``mallopt``), as the task effectively has it;
    ``--trim`` keeps glibc's default, to show the difference.
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import gc
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import orjson
from plowline_core.event.atomic import NATIVE, decode_valid_line

sys.path.insert(0, str(Path(__file__).parent))
from transform import build_lines  # the bench's own mix, one directory up

_M_TRIM_THRESHOLD = -1  # mallopt's parameter number (malloc.h)


def _keep_heap() -> bool:
    """Turn glibc's heap trimming off in this process; False where mallopt is not there."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    mallopt = getattr(libc, "mallopt", None)
    return bool(mallopt is not None and mallopt(_M_TRIM_THRESHOLD, 1 << 30))


def _per_row(
    work: Callable[[Sequence[str]], None], rows: list[str], chunk: int, repeat: int
) -> float:
    """Return the median CPU-µs a row of ``work`` over ``rows`` in chunks of ``chunk``."""
    times = []
    for _ in range(repeat):
        gc.collect()
        start = time.process_time()
        for at in range(0, len(rows), chunk):
            work(rows[at : at + chunk])
        times.append(time.process_time() - start)
    return statistics.median(times) / len(rows) * 1e6


def _decode(chunk: Sequence[str]) -> None:
    held = [decode_valid_line(line) for line in chunk]
    del held


def _decode_encode(chunk: Sequence[str]) -> None:
    held = []
    for line in chunk:
        valid = decode_valid_line(line)
        assert valid is not None
        held.append((valid[0], orjson.dumps(valid[0])))
    del held


def _bytes_only(chunk: Sequence[str]) -> None:
    held = [line.encode() for line in chunk]
    del held


def main() -> None:
    """Print the per-row figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--lines", type=int, default=20_000, help="lines in the mix (default 20000)"
    )
    parser.add_argument("--seed", type=int, default=7, help="seed of the mix (default 7)")
    parser.add_argument("--chunk", type=int, default=500, help="rows held at once (default 500)")
    parser.add_argument("--repeat", type=int, default=5, help="timed passes (default 5)")
    parser.add_argument(
        "--trim", action="store_true", help="keep glibc's heap trimming on (see the notes)"
    )
    args = parser.parse_args()
    trimming = "on" if args.trim or not _keep_heap() else "off, as in a loader task"
    rows = [line for line in build_lines(args.lines, args.seed) if decode_valid_line(line)]
    print(
        f"atomic values as objects: {len(rows)} good lines, chunks of {args.chunk}, median of {args.repeat}"
    )
    print(f"  line decoder in C: {NATIVE}; glibc heap trimming {trimming}")
    for name, work in (
        ("decode", _decode),
        ("decode + encode", _decode_encode),
        ("bytes only", _bytes_only),
    ):
        print(f"  {name:<18} {_per_row(work, rows, args.chunk, args.repeat):6.2f} CPU-µs a row")


if __name__ == "__main__":
    main()
