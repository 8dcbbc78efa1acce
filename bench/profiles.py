"""Profile the loader's process tree during a drain: py-spy for Python, JFR for the JVM.

Used by bench/loader_cpu.py ``--profile DIR``. ``Profilers(...)`` starts both (before the
drain), ``stop()`` ends them and prints the top frames:

- ``DIR/python.txt``: ``py-spy record --subprocesses --nonblocking --format raw`` over the
  driver and every Python process under it (collapsed stacks, one line per stack and count).
  Printed: samples per process, and the functions with the most samples, self and inclusive.
- ``DIR/jvm.jfr``: a JFR recording (``settings=profile``) started and dumped with ``jcmd``.
  Printed: the top Java frames of ``jdk.ExecutionSample`` (Java code only: GC and JIT
  threads are native; loader_cpu.py prints the JVM's threads by CPU from /proc).
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

PY_SPY = Path(sys.executable).parent / "py-spy"
_PROCESS = re.compile(r'^process (\d+):"([^"]*)"')


class Profilers:
    """py-spy over the Python tree under ``driver``, JFR in ``jvm``; ``stop`` prints the tops."""

    def __init__(self, out: Path, driver: int, jvm: int | None, log_dir: Path) -> None:
        self._out = out
        self._jvm = jvm
        argv = [str(PY_SPY), "record", "--pid", str(driver), "--subprocesses", "--nonblocking"]
        argv += ["--gil"]  # samples holding the GIL: Python's CPU, not threads waiting
        argv += ["--rate", "200", "--format", "raw", "--output", str(out / "python.txt")]
        with (log_dir / "py-spy.log").open("wb") as log:
            self._py_spy = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
        self.pid = self._py_spy.pid
        if jvm is not None:
            subprocess.run(
                ["jcmd", str(jvm), "JFR.start", "name=bench", "settings=profile"],
                check=True,
                capture_output=True,
            )

    def stop(self) -> None:
        """Stop both profilers and print their top frames."""
        self._py_spy.send_signal(signal.SIGINT)
        self._py_spy.wait(60)
        if self._jvm is not None:
            jfr = self._out / "jvm.jfr"
            subprocess.run(
                ["jcmd", str(self._jvm), "JFR.stop", "name=bench", f"filename={jfr}"],
                check=True,
                capture_output=True,
            )
            print_jfr_top(jfr)
        print_py_spy_top(self._out / "python.txt")


def print_py_spy_top(raw: Path, top: int = 25) -> None:
    """Print samples per process and the top functions (self, inclusive) of a raw py-spy file."""
    per_process: Counter[str] = Counter()
    leaf: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        count = int(count_text)
        frames = stack.split(";")
        processes = [found for found in map(_PROCESS.match, frames) if found]
        if processes:  # nested: the driver, the JVM, the daemon, the worker
            per_process[f"{processes[-1].group(1)} {processes[-1].group(2)[:70]}"] += count
        frames = [f for f in frames if not f.startswith(("thread ", "process "))]
        if not frames:
            continue
        total += count
        leaf[frames[-1]] += count
        for frame in set(frames):
            inclusive[frame] += count
    print(f"py-spy: {total} samples (200/s) over {len(per_process)} processes")
    for name, count in per_process.most_common(8):
        print(f"  {count:>7}  {name}")
    print("  self (leaf frame):")
    for frame, count in leaf.most_common(top):
        print(f"  {count / total:6.1%}  {frame}")
    print("  inclusive:")
    for frame, count in inclusive.most_common(top):
        print(f"  {count / total:6.1%}  {frame}")


def print_jfr_top(jfr: Path, top: int = 25) -> None:
    """Print the top Java frames (self and within 8 frames of the top) of jdk.ExecutionSample."""
    text = subprocess.run(
        ["jfr", "print", "--json", "--events", "jdk.ExecutionSample", str(jfr)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    events = json.loads(text)["recording"]["events"]
    leaf: Counter[str] = Counter()
    near: Counter[str] = Counter()
    threads: Counter[str] = Counter()
    for event in events:
        values = event["values"]
        frames = [_method(f) for f in (values.get("stackTrace") or {}).get("frames", [])]
        threads[_thread(values)] += 1
        if frames:
            leaf[frames[0]] += 1
            for frame in set(frames[:8]):
                near[frame] += 1
    total = max(len(events), 1)
    print(f"JFR: {len(events)} Java execution samples")
    for name, count in threads.most_common(8):
        print(f"  {count / total:6.1%}  thread {name}")
    print("  self (top frame):")
    for frame, count in leaf.most_common(top):
        print(f"  {count / total:6.1%}  {frame}")
    print("  within the top 8 frames:")
    for frame, count in near.most_common(top):
        print(f"  {count / total:6.1%}  {frame}")


def _method(frame: dict[str, object]) -> str:
    method = frame.get("method") or {}
    assert isinstance(method, dict)
    owner = (method.get("type") or {}).get("name", "?")
    return f"{owner}.{method.get('name', '?')}"


def _thread(values: dict[str, object]) -> str:
    thread = values.get("sampledThread") or {}
    assert isinstance(thread, dict)
    name = str(thread.get("javaName") or thread.get("osName") or "?")
    return re.sub(r"\d+", "N", name)
