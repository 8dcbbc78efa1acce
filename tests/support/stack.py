"""What a test reads back from the local stack: a subscription drained, a table's event counts."""

from __future__ import annotations

import urllib.error
import urllib.request
from typing import Any

from google.cloud import bigquery
from plowline_cloud.clients import publisher_client, subscriber_client
from plowline_core.event.fields import ATOMIC_COLUMNS


def pull_all(
    target: str, subscription: str, max_messages: int = 1000, timeout: float = 5.0
) -> list[bytes]:
    """Pull and ack everything waiting on ``subscription`` (at ``target``); return the bodies.

    Notes:
        It stops at the first empty pull: call it after the publishers confirmed their publishes.
    """
    client = subscriber_client(target)
    found: list[bytes] = []
    while True:
        response = client.pull(
            request={"subscription": subscription, "max_messages": max_messages},
            timeout=timeout,
            retry=None,
        )
        received = list(response.received_messages)
        if not received:
            return found
        found.extend(bytes(r.message.data) for r in received)
        ack_ids = [r.ack_id for r in received]
        client.acknowledge(request={"subscription": subscription, "ack_ids": ack_ids})


def event_counts(client: bigquery.Client, table: str, **result: Any) -> tuple[int, int]:
    """Return ``COUNT(*)`` and ``COUNT(DISTINCT event_id)`` of ``table`` (``project.dataset.table``).

    ``result`` goes to ``QueryJob.result`` (``retry``, ``timeout``).
    """
    sql = f"SELECT COUNT(*) AS n, COUNT(DISTINCT event_id) AS d FROM `{table}`"
    row = next(iter(client.query(sql).result(**result)))
    return int(row["n"]), int(row["d"])


def topic_with_subscription(
    target: str, project: str, topic: str, subscription: str | None = None, ack_deadline_s: int = 10
) -> tuple[str, str]:
    """Create topic ``topic`` and its subscription (named ``subscription``, default the topic's).

    Returns both full paths (``projects/P/topics/T``, ``projects/P/subscriptions/S``).
    """
    topic_path = f"projects/{project}/topics/{topic}"
    subscription_path = f"projects/{project}/subscriptions/{subscription or topic}"
    publisher_client(target).create_topic(request={"name": topic_path})
    subscriber_client(target).create_subscription(
        request={
            "name": subscription_path,
            "topic": topic_path,
            "ack_deadline_seconds": ack_deadline_s,
        }
    )
    return topic_path, subscription_path


def create_events_table(client: bigquery.Client, table: str) -> None:
    """Create ``table`` (``project.dataset.table``) with the atomic columns and nothing else."""
    schema = [bigquery.SchemaField.from_api_repr(column.to_api()) for column in ATOMIC_COLUMNS]
    client.create_table(bigquery.Table(table, schema=schema))


def answers(port: int, path: str = "/readyz") -> bool:
    """Return True when a service on loopback ``port`` answers 200 on ``path``."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as reply:
            return bool(reply.status == 200)
    except (urllib.error.URLError, OSError):
        return False
