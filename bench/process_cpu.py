"""CPU of a process tree from /proc, by process kind and by JVM thread (for bench/loader_cpu.py).

A snapshot sums, over every live process under a root pid, utime+stime (its own CPU) and
cutime+cstime (the CPU of its exited children that it reaped). That counts every process
that ever ran under the root once, with two exceptions that ``TreeCpu`` corrects by
sampling the tree every ``SAMPLE_S`` and remembering each process's last CPU:

- pyspark's daemon ignores SIGCHLD, so its forked workers are reaped by the kernel and
  their CPU reaches nobody's cutime: a process that vanishes from under a parent that
  ignores SIGCHLD (``SigIgn`` in /proc), or whose parent vanished too, is counted with the
  CPU it had when last seen (what it spent in its last ``SAMPLE_S`` is missed);
- an orphan is reparented to the nearest subreaper: the bench makes itself one
  (``adopt_orphans``), counts the orphans it adopted with the tree and reaps them
  (``wait4`` gives their CPU).

Reaped CPU is charged to the kind of the children the reaper has: the JVM reaps Python
processes (the daemons, the source's planner); the driver reaps the JVM launcher.

Kinds: ``driver`` (the root: ``plowline-loader run``), ``jvm`` (java), ``python workers``
(every Python process under the JVM: the pyspark daemons, their forked workers, the
source's planner), ``other`` (the spark-class shell).
"""

from __future__ import annotations

import ctypes
import os
import signal
import threading
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")
SAMPLE_S = 0.2
_SIGCHLD_BIT = 1 << (signal.SIGCHLD - 1)
KINDS = ("driver", "jvm", "python workers", "other")


@dataclass(frozen=True)
class Snapshot:
    """CPU-seconds by kind of the tree under one root, and by thread name of its JVM."""

    by_kind: Counter[str]
    jvm_threads: Counter[str]
    jvm_pid: int | None

    @property
    def total(self) -> float:
        """All CPU-seconds of the tree."""
        return sum(self.by_kind.values())

    def minus(self, earlier: Snapshot) -> Snapshot:
        """Return the CPU spent between ``earlier`` and this snapshot."""
        kinds = Counter({k: self.by_kind[k] - earlier.by_kind[k] for k in KINDS})
        threads = Counter(self.jvm_threads)
        threads.subtract(earlier.jvm_threads)
        return Snapshot(kinds, threads, self.jvm_pid)


def _stat(pid: int | str, task: str = "") -> list[str] | None:
    path = f"/proc/{pid}/task/{task}/stat" if task else f"/proc/{pid}/stat"
    try:
        text = Path(path).read_text()
    except OSError:  # exited since the listing
        return None
    return [text[text.find("(") + 1 : text.rfind(")")], *text[text.rfind(")") + 2 :].split()]


def _children() -> dict[int, list[tuple[int, str]]]:
    """Return every process's children as (pid, state)."""
    children: dict[int, list[tuple[int, str]]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat(entry.name)
            if fields is not None:
                children.setdefault(int(fields[2]), []).append((int(entry.name), fields[1]))
    return children


def tree(root: int, children: dict[int, list[tuple[int, str]]] | None = None) -> list[int]:
    """Return ``root`` and every live process under it."""
    children = _children() if children is None else children
    found, frontier = [root], [root]
    while frontier:
        current = [pid for pid, _ in children.get(frontier.pop(), [])]
        found += current
        frontier += current
    return found


def cpu_seconds(pids: list[int]) -> float:
    """Return utime+stime+cutime+cstime of ``pids`` in seconds (gone processes count as 0)."""
    total = 0
    for pid in pids:
        fields = _stat(pid)
        if fields is not None:
            total += sum(int(value) for value in fields[12:16])
    return total / os.sysconf("SC_CLK_TCK")


def adopt_orphans() -> None:
    """Make this process the subreaper of its descendants' orphans (Linux)."""
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


_PR_SET_CHILD_SUBREAPER = 36


def kind_of(pid: int, root: int) -> str:
    """Return the kind of process ``pid`` in the loader's tree (see the module docstring)."""
    if pid == root:
        return "driver"
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return "other"
    program = os.path.basename(argv[0].decode(errors="replace"))
    if program == "java":
        return "jvm"
    if program.startswith("python"):
        return "python workers"
    return "other"


def _reaped_kind(kind: str) -> str:
    return "jvm" if kind == "driver" else "python workers" if kind != "other" else "other"


class TreeCpu:
    """The CPU of one tree, sampled in a thread, with what left it (see the module notes).

    Notes:
        ``not_adopted``: this process's own children that are not the tree's orphans (the
        stack's servers, profilers). Call ``adopt_orphans`` before starting the tree.
    """

    def __init__(self, root: int, not_adopted: set[int]) -> None:
        self.root = root
        self.not_adopted = not_adopted | {root}
        self._gone: Counter[str] = Counter()  # CPU of processes no longer in the tree
        self._seen: dict[int, tuple[str, int, float, float]] = {}  # kind, parent, own, reaped
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tree-cpu", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop sampling."""
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_S):
            self.snapshot()

    def snapshot(self) -> Snapshot:
        """Return the CPU-seconds of the tree so far, by kind and JVM thread."""
        with self._lock:
            alive = self._sample()
            by_kind: Counter[str] = Counter(dict.fromkeys(KINDS, 0.0))
            by_kind.update(self._gone)
            for kind, _, own, reaped in self._seen.values():
                by_kind[kind] += own
                by_kind[_reaped_kind(kind)] += reaped
        jvm = next((p for p, (k, *_) in alive.items() if k == "jvm"), None)
        return Snapshot(by_kind, jvm_threads(jvm) if jvm else Counter(), jvm)

    def _sample(self) -> dict[int, tuple[str, int, float, float]]:
        children = _children()
        pids = tree(self.root, children)
        for orphan, state in children.get(os.getpid(), []):
            if orphan in self.not_adopted:
                continue
            if state == "Z":
                self._reap(orphan)
            else:
                pids += tree(orphan, children)
        alive: dict[int, tuple[str, int, float, float]] = {}
        for pid in pids:
            fields = _stat(pid)
            if fields is not None:
                utime, stime, cutime, cstime = (int(v) for v in fields[12:16])
                kind = kind_of(pid, self.root)  # again: spark-class execs into java
                alive[pid] = (
                    kind,
                    int(fields[2]),
                    (utime + stime) / TICKS,
                    (cutime + cstime) / TICKS,
                )
        for pid, (kind, parent, own, reaped) in self._seen.items():
            if pid not in alive and (parent not in alive or _ignores_children(parent)):
                self._gone[kind] += own + reaped  # its CPU reached no cutime in the tree
        self._seen = alive
        return alive

    def _reap(self, orphan: int) -> None:
        try:
            _, _, usage = os.wait4(orphan, os.WNOHANG)
        except ChildProcessError:
            return
        kind = self._seen.pop(orphan, ("python workers",))[0]
        self._gone[kind] += usage.ru_utime + usage.ru_stime


def _ignores_children(pid: int) -> bool:
    """Say whether ``pid`` ignores SIGCHLD: its children's CPU never reaches its cutime."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("SigIgn:"):
                return bool(int(line.split()[1], 16) & _SIGCHLD_BIT)
    except OSError:
        pass
    return False


def jvm_threads(pid: int) -> Counter[str]:
    """Return CPU-seconds by thread name (numbers folded: ``Executor task launch worker N``)."""
    threads: Counter[str] = Counter()
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return threads
    for task in tasks:
        fields = _stat(pid, task)
        if fields is not None:
            name = fields[0].rstrip("0123456789-# ").strip() or fields[0]
            threads[name] += (int(fields[12]) + int(fields[13])) / TICKS
    return threads
