"""A micro-batch retried after a transient error re-processes stale deliveries, and absorbs them.

The badRows topic is missing at first, so each attempt lands the good rows and fails to
publish the bad line's bad row (a transient error: the batch is run again). In
exactly-once mode the retry runs the first attempt's rows again (Spark reuses the
shuffle), under ack ids acked already, and the ledger skips them; with the processing
source each retry pulls again but does not replay the partitions' shares of the driver's
probe (acked with their rows the first time), so even the Write API's default stream,
which absorbs no copy, writes each event once.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from plowline_cloud.clients import publisher_client
from plowline_core.testing.tsv import enriched_line
from plowline_loader.streaming import StreamingLoader, StreamSettings
from pyspark.sql import SparkSession
from support.timing import wait_for

if TYPE_CHECKING:
    from conftest import ModeRig

GOOD = 50


@pytest.mark.parametrize(
    "load",
    [
        pytest.param(
            {"mode": "STORAGE_WRITE_API", "stream": "exactly-once"}, id="write-api-exactly-once"
        ),
        pytest.param({"mode": "STREAMING_INSERTS", "retry": False}, id="streaming-inserts"),
        # No insertId and no ledger: a stale delivery re-processed would be a second row.
        pytest.param({"mode": "STORAGE_WRITE_API", "stream": "default"}, id="write-api-default"),
    ],
)
def test_a_retried_batch_writes_each_event_once(
    spark: SparkSession,
    mode_rig: Callable[[dict[str, Any]], ModeRig],
    tmp_path: Path,
    load: dict[str, Any],
) -> None:
    """50 good lines and a bad one, the batch retried twice or more: 50 rows, each once.

    Exactly-once mode re-processes the first attempt's rows (the ledger skips them); the
    processing source re-processes none (the retries pull only the nacked bad line).
    """
    rig = mode_rig(load)
    config = rig.config()
    topic = f"bad-rows-{uuid.uuid4().hex[:8]}"  # not created yet: publishing it fails
    config = dataclasses.replace(
        config, bigquery=dataclasses.replace(config.bigquery, bad_rows=topic)
    )
    lines = [enriched_line(event_id=str(uuid.uuid4())).encode() for _ in range(GOOD)]
    rig.publish_bodies([(line, {}) for line in [*lines, b"not an enriched line"]])
    settings = StreamSettings(
        checkpoint=str(tmp_path / "checkpoint"),
        pull_timeout_s=0.5,
        backoff_initial_s=0.2,
        backoff_max_s=0.5,
    )
    loader = StreamingLoader(spark, config, settings)
    query = loader.start()
    try:
        retried = wait_for(lambda: loader.writer.transient_failures >= 2)
        publisher_client(rig.stack.endpoints.pubsub_target).create_topic(
            request={"name": config.topic(topic)}
        )
        query.processAllAvailable()
    finally:
        loader.stop(30)
    reprocessed = loader.writer.totals.events_in > GOOD + 1
    expected = (True, (GOOD, GOOD), load.get("stream") == "exactly-once")
    assert expected == (retried, rig.counts(), reprocessed)
