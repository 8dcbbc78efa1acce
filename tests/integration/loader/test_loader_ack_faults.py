"""The streaming loader with Pub/Sub refusing acks (``acknowledge-unavailable``): each event once.

A Pub/Sub emulator of its own answers a share of Acknowledge and ModifyAckDeadline calls
with UNAVAILABLE (nothing applied), in short outages; the loader reads its input from it
and writes to the session stack's BigQuery in each mode. An ack that is lost brings the
message back after its deadline: insertAll must then be saved by insertId, exactly-once by
its ledger, the Write API's COMMITTED stream not at all (it retries the ack instead).
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from plowline_cloud.clients import publisher_client, subscriber_client
from plowline_core.testing.tsv import enriched_line
from plowline_devstack.faults.pubsub import PubSubFaults
from plowline_devstack.pubsub import PubSubEmulator, started_with_faults
from plowline_loader.streaming import StreamingLoader, StreamSettings
from pyspark.sql import SparkSession

if TYPE_CHECKING:
    from conftest import ModeRig

EVENTS = 2_000
ACK_DEADLINE_S = 10


@pytest.fixture
def refusing() -> Iterator[tuple[PubSubEmulator, PubSubFaults]]:
    """A Pub/Sub emulator refusing 20% of ack calls, each refusal a 2 s outage."""
    plan = {"seed": 9, "pubsub": {"acknowledge-unavailable": {"rate": 0.2, "seconds": 2}}}
    with started_with_faults(plan) as started:
        yield started


def _provision(endpoint: str, rig: ModeRig, config: Any) -> str:
    """Create the rig's topics and input subscription on ``endpoint``; return the input topic."""
    bq = config.bigquery
    project = f"projects/{bq.project_id}"
    publisher = publisher_client(endpoint)
    for topic in (bq.input, bq.types_topic, bq.bad_rows, bq.failed_inserts):
        publisher.create_topic(request={"name": f"{project}/topics/{topic}"})
    subscriber_client(endpoint).create_subscription(
        request={
            "name": config.input_subscription,
            "topic": f"{project}/topics/{bq.input}",
            "ack_deadline_seconds": ACK_DEADLINE_S,
        }
    )
    return f"{project}/topics/{bq.input}"


@pytest.mark.parametrize(
    "load",
    [
        pytest.param({"mode": "STREAMING_INSERTS", "retry": False}, id="streaming-inserts"),
        pytest.param(
            {"mode": "STORAGE_WRITE_API", "stream": "exactly-once"}, id="write-api-exactly-once"
        ),
        pytest.param({"mode": "STORAGE_WRITE_API", "stream": "default"}, id="write-api-default"),
    ],
)
def test_every_event_lands_once_while_acks_are_refused(
    spark: SparkSession,
    mode_rig: Callable[[dict[str, Any]], ModeRig],
    refusing: tuple[PubSubEmulator, PubSubFaults],
    tmp_path: Path,
    load: dict[str, Any],
) -> None:
    """2,000 events, 20% of ack calls refused in 2 s outages: 2,000 rows, 2,000 event ids."""
    emulator, faults = refusing
    rig = mode_rig(load)
    config = dataclasses.replace(rig.config(), pubsub_emulator_host=emulator.endpoint)
    topic = _provision(emulator.endpoint, rig, config)
    publisher = publisher_client(emulator.endpoint)
    lines = [enriched_line(event_id=str(uuid.uuid4())).encode() for _ in range(EVENTS)]
    for future in [publisher.publish(topic, line) for line in lines]:
        future.result(timeout=60)
    settings = StreamSettings(
        checkpoint=str(tmp_path / "checkpoint"),
        max_messages=500,
        pull_timeout_s=0.5,
        ack_deadline_s=ACK_DEADLINE_S,
        lease_interval_s=3.0,
        backoff_max_s=2.0,
    )
    loader = StreamingLoader(spark, config, settings)
    query = loader.start()
    try:
        query.processAllAvailable()
        time.sleep(ACK_DEADLINE_S + 3)  # a lost ack's message comes back after its deadline
        query.processAllAvailable()
    finally:
        loader.stop(30)

    assert ((EVENTS, EVENTS), faults.acks_refused > 0) == (rig.counts(), True)
