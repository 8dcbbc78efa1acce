"""The demo's loader on a Spark standalone cluster (``plowline demo --workers N``), and where it ran.

:func:`on_cluster` turns the loader's service spec (``plowline-loader run …``) into a
``spark-submit --master spark://…`` of the same arguments; :func:`placement` reads back
from the loader's ``/metrics`` where the work went (``loader_executor_events_total``,
one sample per executor) for the demo's summary.

Notes:
    ``spark-submit`` runs a Python file, not a console script, so the demo writes the
    three-line driver (the same as ``deploy/docker/loader/driver.py``) into its work
    directory. Its executors run this interpreter, so they import the same plowline.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from plowline_devstack.demo.services import ServiceSpec
from plowline_devstack.stack.spark_cluster import SparkCluster

DRIVER_SOURCE = '''"""Run ``plowline-loader`` with this file's arguments (a spark-submit application)."""

import sys

from plowline_loader.cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
'''
_EXECUTOR_EVENTS = "plowline_loader_executor_events_total"
_SUBMIT_CONF = {
    "spark.executor.memory": "512m",
    "spark.driver.memory": "512m",
    "spark.executor.extraJavaOptions": "-XX:+UseSerialGC -XX:TieredStopAtLevel=1",
    "spark.driver.extraJavaOptions": "-XX:+UseSerialGC -XX:TieredStopAtLevel=1",
}


def write_driver(directory: Path) -> Path:
    """Write the loader's spark-submit driver file into ``directory``; return its path."""
    directory.mkdir(parents=True, exist_ok=True)
    driver = directory / "driver.py"
    driver.write_text(DRIVER_SOURCE)
    return driver


def on_cluster(spec: ServiceSpec, cluster: SparkCluster, driver: Path) -> ServiceSpec:
    """Return the loader's ``spec`` submitted to ``cluster`` (same arguments, same port)."""
    command = cluster.submit_command(driver, list(spec.args), _SUBMIT_CONF)
    return ServiceSpec(spec.name, command[0], tuple(command[1:]), spec.port, submit_app=driver)


def placement(port: int, master: str | None) -> list[str]:
    """Return the summary lines saying where the loader ran and how its events were split."""
    per_executor = _executor_events(port)
    split = ", ".join(f"{name}={events:.0f}" for name, events in sorted(per_executor.items()))
    where = (
        f"loader ran on Spark cluster {master} with {len(per_executor)} executors"
        if master
        else "loader ran in Spark local mode (local[*], tasks in the driver's JVM)"
    )
    return [where, f"    events per executor: {split or 'not reported'}"]


def _executor_events(port: int) -> dict[str, float]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2.0) as reply:
            text = reply.read().decode()
    except (OSError, urllib.error.URLError):
        return {}
    return {
        sample.labels["executor"]: float(sample.value)
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == _EXECUTOR_EVENTS
    }
