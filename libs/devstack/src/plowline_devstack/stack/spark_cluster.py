"""A Spark standalone cluster on 127.0.0.1 from the installed pyspark: a master and N workers.

Each daemon is its own JVM (``spark-class org.apache.spark.deploy.master.Master`` /
``...worker.Worker``, shipped in pyspark's wheel, docs/local-stack.md), in its own process
group: an executor the worker launches, and that executor's Python workers, share the
worker's group, so stopping a group stops everything under it. Logs, work and scratch
directories live under the cluster's directory; ports are free loopback ports.

Notes:
    Applications reach it with ``spark-submit --master spark://127.0.0.1:P``
    (``submit_command``), the driver bound to loopback and Python workers running this
    interpreter (``submit_environment``). The cluster's state is a small JSON file beside
    its logs, so ``plowline dev down`` can stop a cluster another command started; a pid
    read back from it is signalled only while its command line still names a Spark daemon.
    Started with ``daemon=False`` (tests), the daemons get SIGTERM when their parent dies,
    so a killed test session leaves no JVM behind.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from plowline_core.errors import PlowlineError

from plowline_devstack.stack.servers import launch, log_since

STATE_FILE = "spark-cluster.json"
_HOST = "127.0.0.1"
_MASTER_AT = re.compile(r"Starting Spark master at (spark://\S+)")
_DAEMON_JVM = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"
_EXECUTOR_CLASS = "CoarseGrainedExecutorBackend"
_DAEMON_CLASS = "org.apache.spark.deploy."


class SparkClusterError(PlowlineError):
    """The cluster could not start (no pyspark or java, or a daemon never came up)."""


@dataclass(frozen=True, slots=True)
class ClusterSpec:
    """How many workers, and what each offers its executors."""

    workers: int = 2
    cores: int = 1
    worker_memory: str = "1500m"
    daemon_memory: str = "256m"  # each master/worker daemon's own heap


@dataclass(frozen=True)
class SparkCluster:
    """A running standalone cluster: its master URL and the daemons' process groups."""

    master_url: str
    directory: Path
    master_pid: int
    worker_pids: tuple[int, ...]
    processes: tuple[subprocess.Popen[bytes], ...] = field(default=(), compare=False, repr=False)

    def submit_command(
        self, app: Path, args: Sequence[str], conf: Mapping[str, str] | None = None
    ) -> list[str]:
        """Return the ``spark-submit`` command running ``app`` with ``args`` on this cluster."""
        settings = {
            "spark.driver.host": _HOST,
            "spark.driver.bindAddress": _HOST,
            "spark.ui.enabled": "false",
            **(conf or {}),
        }
        command = [str(spark_home() / "bin" / "spark-submit"), "--master", self.master_url]
        for key, value in settings.items():
            command += ["--conf", f"{key}={value}"]
        return [*command, str(app), *args]

    def executor_pids(self) -> list[int]:
        """Return the pids of the executor JVMs the workers run now."""
        groups = set(self.worker_pids)
        return [
            pid for pid in _pids() if _group(pid) in groups and _EXECUTOR_CLASS in _cmdline(pid)
        ]

    def kill_executor(self, pid: int) -> list[int]:
        """SIGKILL one executor JVM and every process under it (its Python workers)."""
        victims = [pid, *_descendants(pid)]
        for victim in victims:
            _signal(victim, signal.SIGKILL)
        return victims

    def alive(self) -> bool:
        """Say whether the master and every worker still run."""
        return all(_running(pid) for pid in (self.master_pid, *self.worker_pids))

    def stop(self, grace: float = 5.0) -> None:
        """Stop the workers (with their executors), then the master: SIGTERM, then SIGKILL."""
        groups = [
            pid for pid in (*self.worker_pids, self.master_pid) if _DAEMON_CLASS in _cmdline(pid)
        ]
        for group in groups:
            _signal_group(group, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while any(_running(pid) for pid in groups) and time.monotonic() < deadline:
            time.sleep(0.1)
        for group in groups:
            _signal_group(group, signal.SIGKILL)
        for process in self.processes:
            process.wait(timeout=10)
        (self.directory / STATE_FILE).unlink(missing_ok=True)

    def save(self) -> Path:
        """Write the cluster's state file; return its path."""
        path = self.directory / STATE_FILE
        state = {
            "master_url": self.master_url,
            "master_pid": self.master_pid,
            "worker_pids": list(self.worker_pids),
        }
        path.write_text(json.dumps(state, indent=2))
        return path


def spark_home() -> Path:
    """Return the installed pyspark package, which is a Spark distribution (``bin/``, ``jars/``)."""
    found = importlib.util.find_spec("pyspark")
    if found is None or found.origin is None:
        raise SparkClusterError(
            "pyspark is not installed in this environment: install the loader "
            "(`uv sync` in the plowline checkout) to run a Spark cluster"
        )
    return Path(found.origin).parent


def submit_environment(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """Return the environment for ``spark-submit``: Spark from pyspark, this Python, loopback."""
    return {
        **(os.environ if base is None else base),
        "SPARK_HOME": str(spark_home()),
        "SPARK_LOCAL_IP": _HOST,
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
    }


def start_cluster(
    directory: Path, spec: ClusterSpec, *, daemon: bool = True, timeout: float = 90.0
) -> SparkCluster:
    """Start a master and ``spec.workers`` workers; return once every worker is registered.

    ``daemon``: the cluster outlives this process (``plowline dev up``); otherwise its
    daemons are stopped when this process dies.

    Raises:
        SparkClusterError: naming the daemon that did not come up, with its log's tail.
    """
    if shutil.which("java") is None and "JAVA_HOME" not in os.environ:
        raise SparkClusterError("java is not on PATH (and JAVA_HOME is unset): install a JDK 17+")
    directory.mkdir(parents=True, exist_ok=True)
    env = _daemon_environment(directory, spec)
    port = _free_port()
    since = {name: _size(directory / f"{name}.log") for name in _log_names(spec.workers)}
    master = _launch(
        directory / "master.log",
        ["org.apache.spark.deploy.master.Master", "--host", _HOST, "--port", str(port)],
        env,
        daemon,
    )
    workers: list[subprocess.Popen[bytes]] = []
    try:
        url = _master_url(master, directory / "master.log", since["master"], timeout)
        for index in range(spec.workers):
            work = directory / f"worker-{index}"
            work.mkdir(exist_ok=True)
            arguments = [
                "org.apache.spark.deploy.worker.Worker",
                "--host", _HOST, "--cores", str(spec.cores), "--memory", spec.worker_memory,
                "--work-dir", str(work), url,
            ]  # fmt: skip
            workers.append(_launch(directory / f"worker-{index}.log", arguments, env, daemon))
        for index, worker in enumerate(workers):
            log = directory / f"worker-{index}.log"
            _wait_for_line(log, since[log.stem], "registered with master", worker, timeout)
    except SparkClusterError:
        for process in (*workers, master):
            _signal_group(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
        raise
    processes = (master, *workers)
    cluster = SparkCluster(url, directory, master.pid, tuple(w.pid for w in workers), processes)
    cluster.save()
    return cluster


def read_cluster(directory: Path) -> SparkCluster | None:
    """Return the cluster recorded in ``directory`` (None when there is none)."""
    path = directory / STATE_FILE
    if not path.is_file():
        return None
    state = json.loads(path.read_text())
    return SparkCluster(
        state["master_url"], directory, int(state["master_pid"]), tuple(state["worker_pids"])
    )


def python_driver(submit_pid: int, app: Path) -> int | None:
    """Return the pid of the Python driver running ``app`` under ``spark-submit`` (None: none yet).

    Notes:
        ``spark-submit`` runs a JVM that runs the Python file as its child. A graceful stop
        signals that child: SIGTERM to the JVM ends it at once (exit 143), and its shutdown
        hook stops the SparkContext under the Python driver's feet. The JVM starts other
        Python processes too (the data sources' planner workers): the driver is the one
        running ``app``.
    """
    for pid in _descendants(submit_pid):
        argv = _cmdline(pid).split()
        if len(argv) > 1 and "python" in Path(argv[0]).name and argv[1] == str(app):
            return pid
    return None


def _daemon_environment(directory: Path, spec: ClusterSpec) -> dict[str, str]:
    scratch = directory / "scratch"
    scratch.mkdir(exist_ok=True)
    return {
        **submit_environment(),
        "SPARK_LOG_DIR": str(directory),
        "SPARK_LOCAL_DIRS": str(scratch),
        "SPARK_DAEMON_MEMORY": spec.daemon_memory,
        "SPARK_DAEMON_JAVA_OPTS": _DAEMON_JVM,
        "SPARK_MASTER_WEBUI_PORT": "0",
        "SPARK_WORKER_WEBUI_PORT": "0",  # the worker's UI names executors in their log URLs
    }


def _launch(
    log: Path, arguments: list[str], env: Mapping[str, str], daemon: bool
) -> subprocess.Popen[bytes]:
    command = [str(spark_home() / "bin" / "spark-class"), *arguments]
    server = launch(command, log.stem, {}, log, daemon=daemon, env=env)
    assert server.process is not None  # launch always returns the process it started
    return server.process


def _master_url(process: subprocess.Popen[bytes], log: Path, since: int, timeout: float) -> str:
    """Return the URL the master says it serves at (its port, when the one asked was taken).

    Notes:
        The port is chosen free and bound a moment later; when another process took it in
        between, Spark binds the next free one (``spark.port.maxRetries``) and names it in
        its log: the URL is read there (past ``since``, the log's size before the launch:
        a log kept from an earlier start names an old port), never assumed.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = _MASTER_AT.search(log_since(log, since))
        if found is not None:
            return found.group(1)
        if process.poll() is not None:
            raise SparkClusterError(f"the Spark master exited:\n{_tail(log)}")
        time.sleep(0.2)
    raise SparkClusterError(f"the Spark master did not start within {timeout:.0f} s:\n{_tail(log)}")


def _wait_for_line(
    log: Path, since: int, text: str, process: subprocess.Popen[bytes], timeout: float
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in log_since(log, since):
            return
        if process.poll() is not None:
            raise SparkClusterError(f"a Spark worker exited:\n{_tail(log)}")
        time.sleep(0.2)
    raise SparkClusterError(
        f"a Spark worker did not register within {timeout:.0f} s:\n{_tail(log)}"
    )


def _log_names(workers: int) -> list[str]:
    return ["master", *(f"worker-{index}" for index in range(workers))]


def _size(log: Path) -> int:
    try:
        return log.stat().st_size
    except OSError:
        return 0


def _tail(log: Path, lines: int = 30) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind((_HOST, 0))
        return int(sock.getsockname()[1])


def _pids() -> list[int]:
    return [int(entry.name) for entry in Path("/proc").iterdir() if entry.name.isdigit()]


def _stat(pid: int) -> list[str]:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return []
    return text[text.rfind(")") + 2 :].split()  # fields after the command name


def _group(pid: int) -> int:
    fields = _stat(pid)
    return int(fields[2]) if fields else -1


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for candidate in _pids():
        fields = _stat(candidate)
        if fields:
            children.setdefault(int(fields[1]), []).append(candidate)
    found, frontier = [], [pid]
    while frontier:
        current = children.get(frontier.pop(), [])
        found += current
        frontier += current
    return found


def _running(pid: int) -> bool:
    fields = _stat(pid)
    return bool(fields) and fields[0] != "Z"


def _signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, sig)
