"""The repeater with Pub/Sub refusing acks (``acknowledge-unavailable``): each row lands once.

The repeater runs as a process reading its failed-inserts subscription from a Pub/Sub
emulator of its own that answers a share of Acknowledge and ModifyAckDeadline calls with
UNAVAILABLE (nothing applied), in short outages; the rows go to the session stack's
events table. A row whose ack was lost comes back and is inserted again: insertAll's
insertId (the event id) must keep it one row.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from plowline_cloud.clients import bigquery_client, publisher_client, subscriber_client
from plowline_devstack.faults.pubsub import PubSubFaults
from plowline_devstack.pubsub import PubSubEmulator, started_with_faults
from support.timing import wait_for

DEAD_END = "plowline-dead-end"
ROWS = 40
ACK_DEADLINE_S = 10


@pytest.fixture
def refusing() -> Iterator[tuple[PubSubEmulator, PubSubFaults]]:
    """A Pub/Sub emulator refusing half the ack calls, each refusal a 2 s outage."""
    plan = {"seed": 4, "pubsub": {"acknowledge-unavailable": {"rate": 0.5, "seconds": 2}}}
    with started_with_faults(plan) as started:
        yield started


def _row() -> dict[str, Any]:
    now = datetime.now(UTC).isoformat()
    return {
        "event_id": str(uuid.uuid4()),
        "etl_tstamp": now,
        "collector_tstamp": now,
        "v_collector": "test",
        "v_etl": "test",
    }


def _counts(stack: Any, event_ids: list[str]) -> tuple[int, int]:
    client = bigquery_client(stack.project, stack.endpoints.bigquery_url)
    quoted = ", ".join(f"'{event_id}'" for event_id in event_ids)
    query = (
        f"SELECT COUNT(*) AS n, COUNT(DISTINCT event_id) AS d FROM `{stack.table_ref}` "
        f"WHERE event_id IN ({quoted})"
    )
    row = next(iter(client.query(query).result()))
    return int(row["n"]), int(row["d"])


def test_every_failed_insert_lands_once_while_acks_are_refused(
    local_stack: Any,
    config_files: tuple[Path, Path],
    start_service: Callable[..., Any],
    refusing: tuple[PubSubEmulator, PubSubFaults],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """40 failed inserts that now fit, half the ack calls refused: 40 rows, 40 event ids."""
    emulator, faults = refusing
    topic = f"projects/{local_stack.project}/topics/failed-inserts"
    name = f"failed-inserts-{uuid.uuid4().hex[:8]}"
    publisher = publisher_client(emulator.endpoint)
    publisher.create_topic(name=topic)
    subscriber_client(emulator.endpoint).create_subscription(
        name=f"projects/{local_stack.project}/subscriptions/{name}",
        topic=topic,
        ack_deadline_seconds=ACK_DEADLINE_S,
    )
    monkeypatch.setenv("PUBSUB_EMULATOR_HOST", emulator.endpoint)
    config, resolver = config_files
    service = start_service(
        "plowline_repeater.cli",
        "run",
        "--config",
        str(config),
        "--resolver",
        str(resolver),
        "--failedInsertsSub",
        name,
        "--deadEndBucket",
        f"gs://{DEAD_END}/t-{name}",
        "--port",
        "0",
        "--backoffPeriod",
        "600",
    )
    rows = [_row() for _ in range(ROWS)]
    ids = [str(row["event_id"]) for row in rows]
    for future in [publisher.publish(topic, orjson.dumps(row)) for row in rows]:
        future.result(timeout=30)
    wait_for(lambda: _counts(local_stack, ids)[1] >= ROWS, 90, every_s=1.0)
    time.sleep(ACK_DEADLINE_S + 3)  # a lost ack's row comes back after its deadline
    service.stop()

    assert ((ROWS, ROWS), faults.acks_refused > 0) == (_counts(local_stack, ids), True), (
        service.tail()
    )
