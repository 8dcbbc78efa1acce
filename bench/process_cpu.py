"""CPU of a process tree from /proc, by process kind and by JVM thread (for bench/loader_cpu.py).

A snapshot reads, for every process under a root pid, utime+stime (its own CPU) and
cutime+cstime (the CPU of its children that exited and were reaped). Summing both over the
live tree counts every process that ever ran under the root exactly once: an exited child's
CPU moves into its reaper's cutime when it is reaped. Reaped CPU is charged to the kind of
the children the reaper has: the JVM and the pyspark daemon reap Python workers (idle
workers, the data source's planner runs); the driver reaps the JVM launcher.

Orphans: Spark stops idle pyspark daemons whose forked workers may still run; an orphan
is reparented to the nearest subreaper, and a zombie shows no CPU in /proc until it is
reaped. So the bench makes itself the subreaper (``adopt_orphans``), counts the live
orphans it adopted with the tree, and reaps the dead ones itself (``wait4``: their CPU).

Kinds: ``driver`` (the root: ``plowline-loader run``), ``jvm`` (java), ``python workers``
(every Python process under the JVM: the pyspark daemon, its forked workers, the source's
planner), ``other`` (the spark-class shell).
"""

from __future__ import annotations

import ctypes
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")
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
    """Snapshots of one tree's CPU, with the orphans this (subreaper) process adopted from it.

    Notes:
        ``not_adopted``: this process's own children that are not the tree's orphans (the
        stack's servers, profilers). Call ``adopt_orphans`` before starting the tree.
    """

    def __init__(self, root: int, not_adopted: set[int]) -> None:
        self.root = root
        self.not_adopted = not_adopted | {root}
        self._reaped: Counter[str] = Counter()  # CPU of adopted orphans reaped here
        self._kinds: dict[int, str] = {}  # the kind of every process seen alive

    def snapshot(self) -> Snapshot:
        """Return the CPU-seconds of the tree so far, by kind and JVM thread."""
        children = _children()
        pids = tree(self.root, children)
        for orphan, state in children.get(os.getpid(), []):
            if orphan in self.not_adopted:
                continue
            if state == "Z":
                self._reap(orphan)
            else:
                pids += tree(orphan, children)
        by_kind: Counter[str] = Counter(dict.fromkeys(KINDS, 0.0))
        by_kind.update(self._reaped)
        jvm_pid = None
        for pid in pids:
            fields = _stat(pid)
            if fields is None:
                continue
            utime, stime, cutime, cstime = (int(v) for v in fields[12:16])
            kind = self._kinds.setdefault(pid, kind_of(pid, self.root))
            by_kind[kind] += (utime + stime) / TICKS
            by_kind[_reaped_kind(kind)] += (cutime + cstime) / TICKS
            if kind == "jvm":
                jvm_pid = pid
        return Snapshot(by_kind, jvm_threads(jvm_pid) if jvm_pid else Counter(), jvm_pid)

    def _reap(self, orphan: int) -> None:
        try:
            _, _, usage = os.wait4(orphan, os.WNOHANG)
        except ChildProcessError:
            return
        kind = self._kinds.get(orphan, "python workers")
        self._reaped[kind] += usage.ru_utime + usage.ru_stime


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
