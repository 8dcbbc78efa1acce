"""The executors' worker daemon: preloads the workers' modules, starts no thread, and is Spark's."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from plowline_loader.spark.session import WORKER_DAEMON, command_spark_settings, spark_conf
from plowline_loader.spark.worker_daemon import PRELOADED

_PRELOAD = """
import json, os, sys
from plowline_loader.spark.worker_daemon import PRELOADED, preload
preload()
print(json.dumps({
    "loaded": [name for name in PRELOADED if name in sys.modules],
    "clients": [name for name in ("grpc", "google.cloud.bigquery", "google.pubsub_v1", "pyarrow")
                if name in sys.modules],
    "threads": sorted(open(f"/proc/self/task/{task}/comm").read().strip()
                      for task in os.listdir("/proc/self/task")),
    "transform": "plowline_core.transform.row" in sys.modules,
}))
"""


def _preloaded(environment: dict[str, str]) -> object:
    """Return what a fresh interpreter (as the daemon runs) holds after preload."""
    done = subprocess.run(
        [sys.executable, "-c", _PRELOAD],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env={**os.environ, **environment},
    )
    return json.loads(done.stdout)


@pytest.mark.parametrize(
    "environment",
    [
        pytest.param({}, id="default-environment"),
        pytest.param(
            {"OPENBLAS_NUM_THREADS": "4", "JE_ARROW_MALLOC_CONF": "background_thread:true"},
            id="environment-asking-for-threads",
        ),
    ],
)
def test_preloading_imports_the_workers_modules_and_clients_and_starts_no_thread(
    environment: dict[str, str],
) -> None:
    """After preload the workers' modules, the transform and the Google clients' modules
    (gRPC, BigQuery with pyarrow, Pub/Sub) are loaded and the process still runs one thread,
    even when the environment asks OpenBLAS and jemalloc for threads of their own."""
    expected = {
        "loaded": list(PRELOADED),
        "clients": ["grpc", "google.cloud.bigquery", "google.pubsub_v1", "pyarrow"],
        "threads": ["python"],
        "transform": True,
    }
    assert expected == _preloaded(environment)


def test_every_session_runs_its_workers_from_the_loaders_daemon() -> None:
    """Plain runs and spark-submit alike set spark.python.daemon.module to the loader's daemon."""
    confs = [spark_conf(command_spark_settings(None, launcher=flag)) for flag in (False, True)]

    expected = [WORKER_DAEMON, WORKER_DAEMON]
    assert expected == [conf["spark.python.daemon.module"] for conf in confs]
