"""A publish failing after the insert: the inserted rows are acked, never inserted again.

Real adapters on the local stack (insertAll on bqemulator, the Pub/Sub emulator), no Spark:
the partition's chunk processing (``process_in_chunks``) is what a task runs.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from plowline_cloud.clients import publisher_client
from plowline_cloud.pubsub.pulled import PulledMessage
from plowline_core.testing.tsv import enriched_line
from plowline_loader.bootstrap import build_processor
from plowline_loader.partition import process_in_chunks

if TYPE_CHECKING:
    from conftest import ModeRig


def _row(n: int, data: bytes) -> PulledMessage:
    published_us = int(datetime.now(UTC).timestamp() * 1_000_000)
    return PulledMessage(f"ack-{n}", "projects/p/subscriptions/in", f"m-{n}", published_us, data)


def test_a_missing_bad_rows_topic_hands_back_only_the_bad_line(
    mode_rig: Callable[[dict[str, Any]], ModeRig],
) -> None:
    """badRows refusing (its topic is gone) after 3 rows landed: only the bad line comes back."""
    rig = mode_rig({"mode": "STREAMING_INSERTS", "retry": False})
    config = rig.config()
    topic = f"bad-rows-{uuid.uuid4().hex[:8]}"  # not created yet
    config = dataclasses.replace(
        config, bigquery=dataclasses.replace(config.bigquery, bad_rows=topic)
    )
    processor = build_processor(config)
    lines = [enriched_line(event_id=str(uuid.uuid4())).encode() for _ in range(3)]
    rows = [_row(n, data) for n, data in enumerate([*lines, b"not an enriched line"])]

    report, handed_back = process_in_chunks(processor, rows)
    first = (handed_back, report.outcome.good, rig.counts())
    publisher_client(rig.stack.endpoints.pubsub_target).create_topic(
        request={"name": config.topic(topic)}
    )
    retried, again = process_in_chunks(processor, [rows[3]])

    assert (first, again, retried.outcome.bad, rig.counts()) == (
        (["ack-3"], 3, (3, 3)),
        [],
        1,
        (3, 3),
    )
