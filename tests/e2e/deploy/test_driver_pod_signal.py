"""The driver pod's main process hands SIGTERM to the Python driver, not to the Spark JVM.

Runs deploy/docker/loader/driver_pod.py as the loader image's entrypoint does, with the
arguments Spark on Kubernetes gives a driver pod, on the project's own pyspark (local
master). The application stands in for the loader: on SIGTERM it runs Spark jobs for 2 s
(the in-flight micro-batch) before it stops, which needs the JVM still up.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pyspark
import pytest
from support.timing import wait_for_line

REPO = Path(__file__).resolve().parents[3]
DRIVER_POD = REPO / "deploy" / "docker" / "loader" / "driver_pod.py"

_APP = textwrap.dedent(
    """
    import signal, sys, threading, time
    from pyspark.sql import SparkSession

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda signum, frame: stop.set())
    spark = SparkSession.builder.getOrCreate()
    log = open(sys.argv[1], "a", buffering=1)
    log.write("ready\\n")
    while not stop.wait(0.1):
        pass
    # The in-flight batch: Spark jobs for about 2 s after the signal, so a JVM that was
    # signalled too (and is shutting down) fails one of them.
    counts = set()
    for _ in range(10):
        counts.add(spark.range(1000).count())
        time.sleep(0.2)
    log.write(f"graceful {sorted(counts)}\\n")
    spark.stop()
    """
)


@pytest.fixture
def pod(tmp_path: Path) -> dict[str, Path]:
    """An application, the properties file Spark mounts in a driver pod, and a log file."""
    app = tmp_path / "app.py"
    app.write_text(_APP)
    properties = tmp_path / "spark.properties"
    properties.write_text(
        "spark.master=local[1]\nspark.driver.host=127.0.0.1\nspark.ui.enabled=false\n"
        "spark.submit.deployMode=cluster\n"
    )
    return {"app": app, "properties": properties, "log": tmp_path / "app.log"}


def _env() -> dict[str, str]:
    return {
        **os.environ,
        "SPARK_HOME": str(Path(pyspark.__file__).parent),
        "SPARK_DRIVER_BIND_ADDRESS": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
    }


@contextlib.contextmanager
def _started(argv: list[str]) -> Iterator[subprocess.Popen[bytes]]:
    """Start ``argv`` in its own process group; kill whatever of the group is left after."""
    process = subprocess.Popen(argv, env=_env(), start_new_session=True)
    try:
        yield process
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)


def _pod_args(pod: dict[str, Path]) -> list[str]:
    """What Spark on Kubernetes passes a Python driver pod after ``driver``."""
    return [
        "--properties-file",
        str(pod["properties"]),
        "--class",
        "org.apache.spark.deploy.PythonRunner",
        f"local://{pod['app']}",
        str(pod["log"]),
    ]


def test_driver_pod_sigterm_reaches_the_python_driver(pod: dict[str, Path]) -> None:
    """SIGTERM to the pod's main process runs the loader's graceful stop with Spark still up."""
    with _started([sys.executable, str(DRIVER_POD), *_pod_args(pod)]) as process:
        if not wait_for_line(pod["log"], "ready", 120):
            pytest.fail("the application never wrote 'ready'")
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=120)
    expected = (0, "ready\ngraceful [1000]\n")
    assert expected == (code, pod["log"].read_text())


def test_sigterm_to_the_spark_jvm_loses_the_graceful_stop(pod: dict[str, Path]) -> None:
    """Signalled directly (what tini did), the JVM exits and the Python driver never stops cleanly."""
    spark_submit = Path(_env()["SPARK_HOME"]) / "bin" / "spark-submit"
    argv = [str(spark_submit), "--deploy-mode", "client", *_pod_args(pod)]
    argv.remove(f"local://{pod['app']}")
    argv.insert(-1, str(pod["app"]))
    with _started(argv) as process:
        if not wait_for_line(pod["log"], "ready", 120):
            pytest.fail("the application never wrote 'ready'")
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=120)
        time.sleep(2)
        assert "graceful" not in pod["log"].read_text()
