"""The executors' worker daemon: preloads the workers' modules, nothing fork-unsafe, and is Spark's."""

from __future__ import annotations

import json
import subprocess
import sys

from plowline_loader.spark import WORKER_DAEMON, command_spark_settings, spark_conf
from plowline_loader.worker_daemon import PRELOADED

_PRELOAD = """
import json, os, sys
from plowline_loader.worker_daemon import PRELOADED, preload
preload()
print(json.dumps({
    "loaded": [name for name in PRELOADED if name in sys.modules],
    "unsafe": [name for name in ("grpc", "numpy", "pyarrow", "pandas") if name in sys.modules],
    "threads": len(os.listdir("/proc/self/task")),
    "transform": "plowline_core.transform.row" in sys.modules,
}))
"""


def test_preloading_imports_the_workers_modules_and_nothing_fork_unsafe() -> None:
    """After preload (in a fresh interpreter, as the daemon runs) the workers' modules and the
    transform are loaded, while gRPC, numpy, pyarrow and pandas are not and no thread runs."""
    done = subprocess.run(
        [sys.executable, "-c", _PRELOAD], capture_output=True, text=True, timeout=120, check=True
    )

    expected = {"loaded": list(PRELOADED), "unsafe": [], "threads": 1, "transform": True}
    assert expected == json.loads(done.stdout)


def test_every_session_runs_its_workers_from_the_loaders_daemon() -> None:
    """Plain runs and spark-submit alike set spark.python.daemon.module to the loader's daemon."""
    confs = [spark_conf(command_spark_settings(None, launcher=flag)) for flag in (False, True)]

    expected = [WORKER_DAEMON, WORKER_DAEMON]
    assert expected == [conf["spark.python.daemon.module"] for conf in confs]
