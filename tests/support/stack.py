"""What a test reads back from the local stack: a subscription drained, a table's event counts."""

from __future__ import annotations

from typing import Any

from google.cloud import bigquery
from plowline_cloud.clients import subscriber_client


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
