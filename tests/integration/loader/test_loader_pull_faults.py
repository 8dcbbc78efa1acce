"""The loader with Pub/Sub refusing unary Pulls and lease extensions: retried, never a restart.

A Pub/Sub emulator of its own answers a share of Pull and ModifyAckDeadline calls with
UNAVAILABLE (``pull-unavailable``, ``modify-ack-deadline-unavailable``), in 1 s outages.
Before, the first refused probe pull on the driver ended the streaming query (and so the
loader: a cold start per UNAVAILABLE), and a refused pull on an executor failed the Spark
job. The source tests below it give the source a refusal that outlasts the retries.
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
from plowline_cloud.pubsub import subscription as subscription_module
from plowline_core.errors import PermanentError
from plowline_core.testing.tsv import enriched_line
from plowline_devstack.faults.pubsub import PubSubFaults
from plowline_devstack.pubsub import PubSubEmulator, started_with_faults
from plowline_loader.source.pubsub_source import PubSubSourceOptions, PubSubStreamReader
from plowline_loader.source.pulls import PubSubPartition, pull_bounded
from plowline_loader.streaming import StreamingLoader, StreamSettings
from pyspark.sql import SparkSession

if TYPE_CHECKING:
    from conftest import ModeRig

EVENTS = 1_000
ACK_DEADLINE_S = 10
PROJECT = "projects/plowline-pull-faults"


@pytest.fixture
def refusing() -> Iterator[tuple[PubSubEmulator, PubSubFaults]]:
    """A Pub/Sub emulator refusing 20% of Pull and of ModifyAckDeadline calls, in 1 s outages."""
    plan = {
        "seed": 3,
        "pubsub": {
            "pull-unavailable": {"rate": 0.2, "seconds": 1},
            "modify-ack-deadline-unavailable": {"rate": 0.2, "seconds": 1},
        },
    }
    with started_with_faults(plan) as started:
        yield started


@pytest.fixture
def always_refusing(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[PubSubEmulator, str]]:
    """An emulator refusing every Pull, a subscription with one message, retries cut to 0.5 s."""
    monkeypatch.setattr(subscription_module, "_PULL_RETRY", _short_retry())
    plan = {"pubsub": {"pull-unavailable": {"rate": 1.0}}}
    with started_with_faults(plan) as (emulator, _):
        topic = f"{PROJECT}/topics/t-{uuid.uuid4().hex[:8]}"
        path = f"{PROJECT}/subscriptions/s-{uuid.uuid4().hex[:8]}"
        publisher_client(emulator.endpoint).create_topic(name=topic)
        subscriber_client(emulator.endpoint).create_subscription(name=path, topic=topic)
        publisher_client(emulator.endpoint).publish(topic, b"waits").result(30)
        yield emulator, path


def _short_retry() -> Any:
    retry = subscription_module._PULL_RETRY
    return retry.with_timeout(0.5)


def _reader(endpoint: str, path: str) -> PubSubStreamReader:
    return PubSubStreamReader(
        PubSubSourceOptions(subscription=path, emulator_host=endpoint, pull_timeout_s=0.5)
    )


def test_a_probe_refused_past_its_retries_plans_no_batch(
    always_refusing: tuple[PubSubEmulator, str],
) -> None:
    """latestOffset with every Pull refused answers "nothing new" instead of ending the query."""
    emulator, path = always_refusing
    expected = {"batch": 4}
    assert expected == _reader(emulator.endpoint, path).latestOffset({"batch": 4}, None)  # type: ignore[arg-type]


def test_a_pull_refused_past_its_retries_ends_the_slice_without_failing_the_task(
    always_refusing: tuple[PubSubEmulator, str],
) -> None:
    """A partition whose every Pull is refused yields nothing and raises nothing."""
    emulator, path = always_refusing
    partition = PubSubPartition(0, path, emulator.endpoint, 100, 1 << 20, 0.5, ACK_DEADLINE_S)
    expected: list[Any] = []
    assert expected == list(pull_bounded(partition))


def test_a_missing_subscription_still_ends_the_query(pubsub_emulator: PubSubEmulator) -> None:
    """NOT_FOUND is not transient: latestOffset raises it (the query, and the loader, end)."""
    path = f"{PROJECT}/subscriptions/gone-{uuid.uuid4().hex[:8]}"
    with pytest.raises(PermanentError):
        _reader(pubsub_emulator.endpoint, path).latestOffset({"batch": 0}, None)  # type: ignore[arg-type]


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
    ],
)
def test_every_event_lands_once_while_pulls_are_refused(
    spark: SparkSession,
    mode_rig: Callable[[dict[str, Any]], ModeRig],
    refusing: tuple[PubSubEmulator, PubSubFaults],
    tmp_path: Path,
    load: dict[str, Any],
) -> None:
    """1,000 events, 20% of Pulls and lease extensions refused: the query runs on, 1,000 rows."""
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
        max_messages=100,
        pull_timeout_s=0.5,
        ack_deadline_s=ACK_DEADLINE_S,
        lease_interval_s=3.0,
        backoff_max_s=2.0,
    )
    loader = StreamingLoader(spark, config, settings)
    query = loader.start()
    try:
        query.processAllAvailable()
        time.sleep(ACK_DEADLINE_S + 3)  # a message whose extension was lost may come back
        query.processAllAvailable()
        active = query.isActive
    finally:
        loader.stop(30)

    expected = ((EVENTS, EVENTS), True, True)
    assert expected == (rig.counts(), active, faults.pulls_refused > 0)
