"""The Spark driver pod's main process: run ``spark-submit`` and hand SIGTERM to the loader.

Spark on Kubernetes starts the driver pod as ``<image> driver --properties-file F --class
org.apache.spark.deploy.PythonRunner <main file> ARGS``, and Spark's own entrypoint answers
by running ``spark-submit`` in client mode. That JVM starts the loader (``driver.py``) as its
child. When Kubernetes stops the pod, the SIGTERM it sends must reach the loader, whose
handler finishes the micro-batch in flight and acks what is durable before Spark stops.
Sent to the JVM instead (what ``tini`` does with its only child), the JVM's shutdown hooks
stop the SparkContext under the running batch and the loader never sees the signal.

So this process (tini's only child) starts ``spark-submit``, and on SIGTERM or SIGINT
signals the Python driver process that the JVM started, never the JVM. The JVM exits when
the loader does, with its exit code, which this process returns.

Notes:
    The loader is found as the JVM's child process that runs the main file; a signal that
    arrives before it has started is held and delivered once it has.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

_POLL_S = 0.2


def submit_command(spark_home: str, bind_address: str, args: Sequence[str]) -> list[str]:
    """Return the ``spark-submit`` command Spark's own entrypoint runs for a driver pod."""
    return [
        f"{spark_home}/bin/spark-submit",
        "--conf",
        f"spark.driver.bindAddress={bind_address}",
        "--conf",
        f"spark.executorEnv.SPARK_DRIVER_POD_IP={bind_address}",
        "--deploy-mode",
        "client",
        *args,
    ]


def main_file(args: Sequence[str]) -> str:
    """Return the application file in spark-submit's arguments (the first non-option)."""
    index = 0
    while index < len(args):
        arg = args[index]
        if not arg.startswith("--"):
            return arg.removeprefix("local://")
        index += 1 if "=" in arg else 2
    raise SystemExit("driver_pod: no application file in the driver's arguments")


def children(pid: int) -> list[int]:
    """Return the pids whose parent is ``pid`` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # Fields after the command name (in parentheses, may hold spaces): state, ppid, ...
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid:
            found.append(int(entry.name))
    return found


def python_driver(jvm: int, application: str) -> int | None:
    """Return the pid of the JVM's child that runs ``application`` (None: not started yet)."""
    for pid in children(jvm):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if application.encode() in argv:
            return pid
    return None


def run(args: Sequence[str]) -> int:
    """Run the driver: spark-submit with ``args``; SIGTERM goes to the loader. Return its code."""
    command = submit_command(
        os.environ["SPARK_HOME"], os.environ.get("SPARK_DRIVER_BIND_ADDRESS", "0.0.0.0"), args
    )
    application = main_file(args)
    pending: list[int] = []

    def hold(signum: int, frame: FrameType | None) -> None:
        pending.append(signum)

    signal.signal(signal.SIGTERM, hold)
    signal.signal(signal.SIGINT, hold)
    # The JVM ignores SIGINT from a terminal's process group the same way: own session.
    jvm = subprocess.Popen(command, start_new_session=True)
    while True:
        try:
            return jvm.wait(timeout=_POLL_S)
        except subprocess.TimeoutExpired:
            pass
        if pending:
            driver = python_driver(jvm.pid, application)
            if driver is not None:
                os.kill(driver, pending.pop(0))


def main() -> None:
    """Entry point of the driver pod (``driver-pod.py ARGS`` from the image's entrypoint)."""
    started = time.monotonic()
    code = run(sys.argv[1:])
    print(f"driver_pod: spark-submit exited {code} after {time.monotonic() - started:.0f}s")
    sys.exit(code)


if __name__ == "__main__":
    main()
