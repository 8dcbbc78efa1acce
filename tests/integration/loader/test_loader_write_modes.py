"""The streaming loader in each ``load.mode`` on the local stack: every event lands once.

Each test gets a fresh events table (atomic columns) and input subscription, so the
table's ``COUNT(*)`` and ``COUNT(DISTINCT event_id)`` are this test's alone. Events carry
no entities: the Iglu resolver is never asked (an empty embedded repository suffices).
STREAMING_INSERTS is covered by ``test_loader_streaming.py``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from google.cloud import bigquery
from plowline_cloud.clients import bigquery_client, publisher_client, subscriber_client
from plowline_core.event.fields import ATOMIC_COLUMNS
from plowline_core.schema.entity import ColumnMode
from plowline_core.testing.tsv import enriched_line
from plowline_devstack.stack import LocalStack
from plowline_loader.bootstrap import WorkerConfig, load_bigquery_config
from plowline_loader.streaming import StreamingLoader, StreamSettings
from pyspark.sql import SparkSession

EVENTS_PER_MODE = 10_000
KILLS = 3
EVENTS_PER_LIFE = 1_000  # published before each loader process starts (kills + 1 lives)
ACK_DEADLINE_S = 10
_LOADER_FLAGS = {
    "max_messages": 100,
    "ack_deadline_s": ACK_DEADLINE_S,
    "env": {"PLOWLINE_LOADER_LOG_JSON": "false"},
}


@dataclass(frozen=True)
class ModeRig:
    """A fresh table and input subscription, and loader config files for one ``load`` mode."""

    stack: LocalStack
    root: Path
    table_ref: str
    input_topic: str
    config_file: Path
    resolver_file: Path

    def config(self) -> WorkerConfig:
        """Return the executors' config pointing at the local stack."""
        return WorkerConfig(
            bigquery=load_bigquery_config(self.config_file),
            resolver_json=self.resolver_file.read_text(),
            resolver_dir=str(self.root),
            column_mode=ColumnMode.FULL,
            version="0.1.0",
            pubsub_emulator_host=self.stack.endpoints.pubsub_target,
            bigquery_emulator_host=self.stack.endpoints.bigquery_url,
            bigquery_grpc_host=self.stack.endpoints.bigquery_grpc_target,
            storage_emulator_host=self.stack.endpoints.storage_url,
            staging_bucket=_bucket(self.stack),
        )

    def publish(self, event_ids: list[str]) -> None:
        """Publish one enriched line per event id and wait until each is accepted."""
        publisher = publisher_client(self.stack.endpoints.pubsub_target)
        futures = [
            publisher.publish(self.input_topic, enriched_line(event_id=event_id).encode())
            for event_id in event_ids
        ]
        for future in futures:
            future.result(timeout=60)

    def counts(self) -> tuple[int, int]:
        """Return the table's ``COUNT(*)`` and ``COUNT(DISTINCT event_id)``."""
        client = bigquery_client(self.stack.project, self.stack.endpoints.bigquery_url)
        sql = f"SELECT COUNT(*) AS n, COUNT(DISTINCT event_id) AS d FROM `{self.table_ref}`"
        row = next(iter(client.query(sql).result()))
        return int(row["n"]), int(row["d"])


def _bucket(stack: LocalStack) -> str:
    return sorted(stack.config.buckets)[0]


def _new_rig(stack: LocalStack, root: Path, load: dict[str, Any]) -> ModeRig:
    name = uuid.uuid4().hex[:10]
    client = bigquery_client(stack.project, stack.endpoints.bigquery_url)
    table_ref = f"{stack.project}.{stack.dataset}.events_{name}"
    schema = [bigquery.SchemaField.from_api_repr(column.to_api()) for column in ATOMIC_COLUMNS]
    client.create_table(bigquery.Table(table_ref, schema=schema))
    endpoint = stack.endpoints.pubsub_target
    project = f"projects/{stack.project}"
    topic = f"{project}/topics/in-{name}"
    publisher_client(endpoint).create_topic(request={"name": topic})
    subscriber_client(endpoint).create_subscription(
        request={
            "name": f"{project}/subscriptions/in-{name}",
            "topic": topic,
            "ack_deadline_seconds": ACK_DEADLINE_S,
        }
    )
    config = _bigquery_config(stack, f"events_{name}", f"in-{name}", load)
    repository = root / "iglu"
    repository.mkdir()
    resolver = {
        "schema": "iglu:com.snowplowanalytics.iglu/resolver-config/jsonschema/1-0-3",
        "data": {
            "cacheSize": 10,
            "cacheTtl": 60,
            "repositories": [
                {
                    "name": "empty",
                    "priority": 0,
                    "vendorPrefixes": [],
                    "connection": {"embedded": {"path": str(repository)}},
                }
            ],
        },
    }
    config_file, resolver_file = root / "config.json", root / "resolver.json"
    config_file.write_text(json.dumps(config))
    resolver_file.write_text(json.dumps(resolver))
    return ModeRig(stack, root, table_ref, topic, config_file, resolver_file)


def _bigquery_config(
    stack: LocalStack, table: str, subscription: str, load: dict[str, Any]
) -> dict[str, Any]:
    return {
        "schema": "iglu:com.snowplowanalytics.snowplow.storage/bigquery_config/jsonschema/1-0-0",
        "data": {
            "name": "write modes test",
            "id": "31b1559d-d319-4023-aaae-97698238d808",
            "projectId": stack.project,
            "datasetId": stack.dataset,
            "tableId": table,
            "input": subscription,
            "typesTopic": "types",
            "typesSubscription": "types-mutator",
            "badRows": "bad-rows",
            "failedInserts": "failed-inserts",
            "load": load,
            "purpose": "ENRICHED_EVENTS",
        },
    }


def _eventually(check: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)
    return True


@pytest.mark.parametrize(
    "load",
    [
        pytest.param({"mode": "STORAGE_WRITE_API", "stream": "default"}, id="write-api-default"),
        pytest.param(
            {"mode": "STORAGE_WRITE_API", "stream": "exactly-once"}, id="write-api-exactly-once"
        ),
        pytest.param({"mode": "FILE_LOADS", "frequency": 100}, id="file-loads"),
    ],
)
def test_every_event_lands_once(
    spark: SparkSession, local_stack: LocalStack, tmp_path: Path, load: dict[str, Any]
) -> None:
    """10,000 events streamed through the loader in this mode are each in the table once."""
    rig = _new_rig(local_stack, tmp_path, load)
    rig.publish([str(uuid.uuid4()) for _ in range(EVENTS_PER_MODE)])
    settings = StreamSettings(
        checkpoint=str(tmp_path / "checkpoint"),
        max_messages=2500,
        pull_timeout_s=0.5,
        ack_deadline_s=30,
        lease_interval_s=5.0,
        backoff_max_s=2.0,
    )
    loader = StreamingLoader(spark, rig.config(), settings)
    query = loader.start()
    try:
        query.processAllAvailable()
    finally:
        loader.stop(30)

    expected = (EVENTS_PER_MODE, EVENTS_PER_MODE, EVENTS_PER_MODE)
    assert expected == (loader.writer.totals.good, *rig.counts())


def test_exactly_once_survives_three_kills(
    local_stack: LocalStack, tmp_path: Path, spawn_loader: Callable[..., subprocess.Popen[bytes]]
) -> None:
    """A loader process SIGKILLed three times mid-stream in exactly-once mode: no loss, no dupes."""
    rig = _new_rig(local_stack, tmp_path, {"mode": "STORAGE_WRITE_API", "stream": "exactly-once"})
    sent = 0
    for life in range(KILLS):
        rig.publish([str(uuid.uuid4()) for _ in range(EVENTS_PER_LIFE)])
        sent += EVENTS_PER_LIFE
        before = rig.counts()[0]
        loader = spawn_loader(
            rig.config_file, rig.resolver_file, tmp_path / f"life-{life}.log", **_LOADER_FLAGS
        )
        try:
            progressed = _eventually(lambda: rig.counts()[0] > before, 180)  # noqa: B023
        finally:
            os.killpg(loader.pid, signal.SIGKILL)
            loader.wait(30)
        assert progressed, (tmp_path / f"life-{life}.log").read_text()[-3000:]
    rig.publish([str(uuid.uuid4()) for _ in range(EVENTS_PER_LIFE)])
    sent += EVENTS_PER_LIFE
    last = spawn_loader(rig.config_file, rig.resolver_file, tmp_path / "last.log", **_LOADER_FLAGS)
    try:
        _eventually(lambda: rig.counts()[1] >= sent, 240)
        # Real time on purpose: leases the killed processes held lapse on the emulator's
        # wall clock, and their messages come back to this process only then.
        time.sleep(ACK_DEADLINE_S + 5)
    finally:
        last.send_signal(signal.SIGTERM)
        code = last.wait(60)

    expected = (sent, sent, 0)
    assert expected == (*rig.counts(), code), (tmp_path / "last.log").read_text()[-3000:]


def test_file_loads_start_one_load_job_per_partition_per_window(
    spark: SparkSession, local_stack: LocalStack, tmp_path: Path
) -> None:
    """2,000 events in FILE_LOADS: one load job per micro-batch partition, not one per 500 rows."""
    rig = _new_rig(local_stack, tmp_path, {"mode": "FILE_LOADS", "frequency": 100})
    rig.publish([str(uuid.uuid4()) for _ in range(2_000)])
    settings = StreamSettings(
        checkpoint=str(tmp_path / "checkpoint"),
        partitions=1,
        max_messages=5_000,
        pull_timeout_s=0.5,
        ack_deadline_s=30,
        lease_interval_s=5.0,
        backoff_max_s=2.0,
    )
    loaded: list[int] = []  # events per micro-batch (one partition each)
    observer = lambda outcome: loaded.append(outcome.events_in) if outcome.events_in else None  # noqa: E731
    loader = StreamingLoader(spark, rig.config(), settings, observer=observer)
    query = loader.start()
    try:
        query.processAllAvailable()
    finally:
        loader.stop(30)

    client = bigquery_client(local_stack.project, local_stack.endpoints.bigquery_url)
    table_id = rig.table_ref.rsplit(".", 1)[1]
    jobs = [
        job
        for job in client.list_jobs(all_users=True)
        if job.job_type == "load" and job.destination.table_id == table_id
    ]
    assert (sum(loaded), len(jobs), rig.counts()) == (2_000, len(loaded), (2_000, 2_000))
    assert max(loaded) > 500, "a batch must hold more than one old 500-row chunk to tell"
