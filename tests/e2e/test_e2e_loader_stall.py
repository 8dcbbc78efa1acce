"""A loader whose Spark Python workers hang mid-batch exits by itself, and its messages load.

The unkind case behind a chaos run that stopped loading: a micro-batch that
never ends keeps its messages leased (the task's lease extender runs on), so the loader
sat alive and idle with a backlog until Kubernetes' liveness probe, 10 minutes later.
Here every Python worker of the loader (and their daemon) is SIGSTOPped while events
arrive: the batch in flight hangs. With a 5 s stall timeout the loader must exit with
code 1 and a log naming the stall; restarted, it loads every event.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest
from plowline_devstack.demo.generate import generate
from plowline_devstack.demo.run import DemoRun
from plowline_devstack.demo.services import LOADER
from support.timing import wait_for

_ENV = {
    "PLOWLINE_LOADER_ACK_DEADLINE": "10",
    "PLOWLINE_LOADER_LEASE_INTERVAL": "3",
    "PLOWLINE_LOADER_STALL_TIMEOUT": "5",
    "PLOWLINE_LOADER_GRACE_PERIOD": "5",
    "PLOWLINE_LOADER_TASK_SECONDS": "1",  # within a quarter of the stall timeout
}
_EVENTS = 300


def _descendants(pid: int) -> list[int]:
    """Return the pids below ``pid`` in the process tree (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _python_workers(pid: int) -> list[int]:
    """Return the loader's worker daemon and its workers (the tasks' Python; see ``worker_daemon``)."""
    workers = []
    for child in _descendants(pid):
        try:
            command = Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        forked_by_a_daemon = (
            b"pyspark.daemon" in command or b"plowline_loader.spark.worker_daemon" in command
        )
        if forked_by_a_daemon and command.rstrip().endswith(b"pyspark.worker"):
            workers.append(child)
    return workers


@pytest.mark.timeout(600)
def test_a_loader_with_hung_python_workers_exits_and_its_events_load(tmp_path: Path) -> None:
    """Workers SIGSTOPped mid-stream: the loader exits 1 naming the stall; restarted, all load."""
    run = DemoRun(tmp_path, env=_ENV)
    stopped: list[int] = []
    try:
        run.start(timeout=240.0)
        loader = run.services[LOADER]
        lines = list(generate(_EVENTS, start=datetime.now(UTC), seed=7, rate=500.0))
        run.publish(lines[:50], rate=100.0)
        wait_for(lambda: _python_workers(loader.process.pid), 120, every_s=0.5)
        stopped = _python_workers(loader.process.pid)
        for pid in stopped:
            os.kill(pid, signal.SIGSTOP)
        run.publish(lines[50:], rate=200.0)
        try:
            code: int | None = loader.process.wait(120)
        except subprocess.TimeoutExpired:  # still alive: the defect; the assertion says so
            code = None
        _end(stopped)  # the hung workers of the loader that exited
        log = loader.log.read_text(errors="replace")
        assert stopped, "no Python worker of the loader was found"
        assert code == 1, f"the loader did not exit by itself (exit code {code})"
        assert "loader stalled" in log
        # Restarted as a deployment runs it: the 5 s timeout was the fault's trap; on a
        # loaded machine a first batch can take longer, and a second exit would end the test.
        run.extra_env["PLOWLINE_LOADER_STALL_TIMEOUT"] = "120"
        run.restart(LOADER, kill=True, timeout=240.0)
        wait_for(lambda: run.progress(len(lines)).accounted >= len(lines), 180, every_s=1.0)
        accounting = run.account(lines)
        assert (len(accounting.missing), len(accounting.misplaced)) == (0, 0)
    finally:
        _end(stopped)
        run.stop()


def _end(pids: list[int]) -> None:
    """SIGKILL the processes this test stopped (a stopped process takes no SIGTERM)."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
