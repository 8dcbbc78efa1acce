"""Cluster fixtures: a Spark standalone cluster (a master, two 1-core workers) and loader rigs.

The cluster starts once for the tier (``plowline_devstack.stack.spark_cluster``, the same code
``plowline dev up --workers`` runs) and stops at its end, JVMs killed even when a test
failed; the local stack is the session's (root conftest). Each test gets a fresh events
table, input topic and subscription, and watch subscriptions on ``bad-rows`` and
``failed-inserts``, and submits the loader with ``spark-submit --master spark://…`` through
``deploy/docker/loader/driver.py``, the SparkApplication's main file.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from plowline_cloud.clients import bigquery_client, publisher_client, subscriber_client
from plowline_core.testing.tsv import enriched_line
from plowline_devstack.stack.lifecycle import LocalStack
from plowline_devstack.stack.servers import free_port
from plowline_devstack.stack.spark_cluster import (
    ClusterSpec,
    SparkCluster,
    SparkClusterError,
    python_driver,
    start_cluster,
    submit_environment,
)
from support.configs import bigquery_config, write_config_files
from support.stack import (
    create_events_table,
    event_counts,
    pull_all,
    topic_with_subscription,
)

REPO = Path(__file__).resolve().parents[2]
DRIVER = REPO / "deploy" / "docker" / "loader" / "driver.py"
ACK_DEADLINE_S = 10
_EXECUTOR_METRIC = re.compile(
    r'^plowline_loader_executor_events_total\{executor="([^"]+)"\} (\S+)$'
)
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_SUBMIT_CONF = {
    "spark.executor.memory": "512m",
    "spark.driver.memory": "512m",
    "spark.cores.max": "2",
    "spark.executor.extraJavaOptions": "-XX:+UseSerialGC -XX:TieredStopAtLevel=1",
    "spark.driver.extraJavaOptions": "-XX:+UseSerialGC -XX:TieredStopAtLevel=1",
}
_LOADER_ENV = {
    "PLOWLINE_LOADER_LOG_JSON": "false",
    "PLOWLINE_LOADER_ACK_DEADLINE": str(ACK_DEADLINE_S),
    "PLOWLINE_LOADER_LEASE_INTERVAL": "3",
    "PLOWLINE_LOADER_PULL_TIMEOUT": "0.5",
    "PLOWLINE_LOADER_BACKOFF_MAX": "2",
}


@dataclass
class Submitted:
    """One ``spark-submit`` of the loader: its process (own group), log and metrics port."""

    process: subprocess.Popen[bytes]
    log: Path
    port: int

    def tail(self) -> str:
        """Return the end of the driver's log."""
        return self.log.read_text(errors="replace")[-5000:]

    def executor_events(self) -> dict[str, float]:
        """Return ``loader_executor_events_total`` per executor from the driver's /metrics."""
        url = f"http://127.0.0.1:{self.port}/metrics"
        with urllib.request.urlopen(url, timeout=5) as response:
            text = response.read().decode()
        found = (_EXECUTOR_METRIC.match(line) for line in text.splitlines())
        return {match.group(1): float(match.group(2)) for match in found if match}

    def stop(self, timeout: float = 90.0) -> int:
        """SIGTERM the Python driver (graceful stop) and return spark-submit's exit code."""
        driver = python_driver(self.process.pid, DRIVER)
        if driver is not None:
            os.kill(driver, signal.SIGTERM)
        return self.process.wait(timeout)

    def kill(self) -> None:
        """SIGKILL the driver's whole process group (spark-submit's JVM and the Python driver)."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(30)


@dataclass
class ClusterRig:
    """A fresh table and subscriptions on the local stack, and loader config files."""

    stack: LocalStack
    cluster: SparkCluster
    root: Path
    table: str
    input_topic: str
    watch: dict[str, str]
    config_file: Path
    resolver_file: Path
    submitted: list[Submitted] = field(default_factory=list)
    bad_payloads: list[bytes] = field(default_factory=list)

    @staticmethod
    def bad_line(marker: str) -> str:
        """Return a line that is not enriched TSV, with ``marker`` where the event id would be.

        Notes:
            Eight tab fields: lines with fewer than 7 crash exactly-once keying until the
            hostile-loader fix merges (``streaming.by_event_id``).
        """
        return "\t".join(["broken"] * 6 + [marker, "end"])

    @property
    def table_ref(self) -> str:
        """``project.dataset.table`` of this rig's events table."""
        return f"{self.stack.project}.{self.stack.dataset}.{self.table}"

    def publish(self, lines: list[str]) -> None:
        """Publish ``lines`` to the input topic and wait until each is accepted."""
        publisher = publisher_client(self.stack.endpoints.pubsub_target)
        futures = [publisher.publish(self.input_topic, line.encode()) for line in lines]
        for future in futures:
            future.result(timeout=60)

    def stream(self, events: int, bad_every: int) -> tuple[list[str], list[str]]:
        """Publish ``events`` lines, every ``bad_every``-th a bad one; return good and bad ids."""
        good, bad, lines = [], [], []
        for n in range(events):
            event_id = str(uuid.uuid4())
            if n % bad_every == bad_every - 1:
                bad.append(event_id)
                lines.append(self.bad_line(event_id))
            else:
                good.append(event_id)
                lines.append(enriched_line(event_id=event_id))
        self.publish(lines)
        return good, bad

    def counts(self) -> tuple[int, int]:
        """Return the table's ``COUNT(*)`` and ``COUNT(DISTINCT event_id)``."""
        client = bigquery_client(self.stack.project, self.stack.endpoints.bigquery_url)
        return event_counts(client, self.table_ref)

    def duplicated(self) -> list[str]:
        """Return the event ids that are more than one row of the table."""
        client = bigquery_client(self.stack.project, self.stack.endpoints.bigquery_url)
        sql = f"SELECT event_id FROM `{self.table_ref}` GROUP BY event_id HAVING COUNT(*) > 1"
        return sorted(str(row["event_id"]) for row in client.query(sql).result())

    def drain(self, name: str) -> list[bytes]:
        """Pull and ack everything waiting on the watch subscription of topic ``name``."""
        return pull_all(self.stack.endpoints.pubsub_target, self.watch[name])

    def bad_rows_for(self, markers: list[str]) -> list[str]:
        """Return the marker of every bad row seen so far that names one (with repeats)."""
        self.bad_payloads += self.drain("bad-rows")
        wanted = set(markers)
        return [
            marker
            for payload in self.bad_payloads
            for marker in _UUID.findall(json.dumps(json.loads(payload)["data"]["payload"]))
            if marker in wanted
        ]

    def submit(self, command: str, *args: str, checkpoint: str = "checkpoint") -> Submitted:
        """``spark-submit`` the loader's ``command`` to the cluster, in its own process group."""
        port = free_port()
        loader_args = [
            command, "--config", str(self.config_file), "--resolver", str(self.resolver_file),
        ]  # fmt: skip
        if command == "run":
            loader_args += ["--checkpoint", str(self.root / checkpoint), "--port", str(port)]
        argv = self.cluster.submit_command(DRIVER, [*loader_args, *args], _SUBMIT_CONF)
        log = self.root / f"driver-{len(self.submitted)}.log"
        env = submit_environment({**os.environ, **_LOADER_ENV})
        with log.open("wb") as out:
            process = subprocess.Popen(
                argv, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
        submitted = Submitted(process, log, port)
        self.submitted.append(submitted)
        return submitted


@pytest.fixture(scope="package")
def spark_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkCluster]:
    """A standalone cluster on 127.0.0.1: a master and two workers, 1 core each."""
    directory = tmp_path_factory.mktemp("spark-cluster")
    try:
        cluster = start_cluster(directory, ClusterSpec(workers=2, cores=1), daemon=False)
    except SparkClusterError as error:
        pytest.fail(f"the Spark cluster did not start: {error}", pytrace=False)
    try:
        yield cluster
    finally:
        cluster.stop(grace=5)


@pytest.fixture
def make_rig(
    local_stack: LocalStack, spark_cluster: SparkCluster, tmp_path: Path
) -> Iterator[Callable[[dict[str, Any]], ClusterRig]]:
    """``make_rig(load)``: a fresh rig for ``load``; drivers it submitted are killed at the end."""
    rigs: list[ClusterRig] = []

    def make(load: dict[str, Any]) -> ClusterRig:
        rig = _new_rig(local_stack, spark_cluster, tmp_path / f"rig-{len(rigs)}", load)
        rigs.append(rig)
        return rig

    yield make
    for rig in rigs:
        for submitted in rig.submitted:
            if submitted.process.poll() is None:
                submitted.kill()


def _new_rig(
    stack: LocalStack, cluster: SparkCluster, root: Path, load: dict[str, Any]
) -> ClusterRig:
    root.mkdir(parents=True)
    name = uuid.uuid4().hex[:10]
    table = f"events_{name}"
    client = bigquery_client(stack.project, stack.endpoints.bigquery_url)
    create_events_table(client, f"{stack.project}.{stack.dataset}.{table}")
    endpoint = stack.endpoints.pubsub_target
    subscriber = subscriber_client(endpoint)
    project = f"projects/{stack.project}"
    topic, _ = topic_with_subscription(endpoint, stack.project, f"in-{name}", None, ACK_DEADLINE_S)
    watch = {}
    for output in ("bad-rows", "failed-inserts"):
        path = f"{project}/subscriptions/watch-{output}-{name}"
        subscriber.create_subscription(request={"name": path, "topic": stack.topic_path(output)})
        watch[output] = path
    config = bigquery_config(
        name="cluster test",
        project=stack.project,
        dataset=stack.dataset,
        table=table,
        input=f"in-{name}",
        load=load,
    )
    config_file, resolver_file = write_config_files(root, config)
    return ClusterRig(stack, cluster, root, table, topic, watch, config_file, resolver_file)
