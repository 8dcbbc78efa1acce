"""Nothing written twice while part of a message waits (issue 37, finding 2), through the running loader.

Three compressed batches, each [good, needs a missing schema, good], in the Write API's
default stream (which absorbs no copy: no insertId, no ledger), with 2.x's
``exitOnMissingIgluSchema`` hold on. Before, each batch was handed back whole at every
retry of the hold and its good records appended again each time. Now the driver parks
each batch: its good records are written once, the held ones wait in the process, leased,
and ``/readyz`` names their schema. The hold retries every second here (60 s by
default), so 150 s of holding is 150 retries, where the default gives 2 or 3.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from plowline_core.event.compressed import Compression, write_batch
from plowline_core.testing.tsv import enriched_line, with_entities
from plowline_loader.batch.schema_hold import SchemaHold
from plowline_loader.streaming import StreamingLoader, StreamSettings
from pyspark.sql import SparkSession

if TYPE_CHECKING:
    from conftest import ModeRig

MISSING = "iglu:com.acme/missing/jsonschema/1-0-0"
HOLDING_S = 150.0


def test_the_good_records_of_a_batch_with_a_held_record_are_written_once(
    mode_rig: Callable[[dict[str, Any]], ModeRig],  # first: the stack starts before Spark
    spark: SparkSession,
    tmp_path: Path,
) -> None:
    """After 150 s of holding, each good event is one row and the held ones are still held."""
    rig = mode_rig({"mode": "STORAGE_WRITE_API", "stream": "default"})
    batches = []
    for _ in range(3):
        good = [enriched_line(event_id=str(uuid.uuid4())).encode() for _ in range(2)]
        held = with_entities(contexts=[(MISSING, {"a": 1})], event_id=str(uuid.uuid4()))
        batches.append(write_batch([good[0], held.encode(), good[1]], Compression.GZIP))
    rig.publish_bodies([(data, {}) for data in batches])
    settings = StreamSettings(
        checkpoint=str(tmp_path / "checkpoint"),
        pull_timeout_s=0.5,
        ack_deadline_s=30,
        lease_interval_s=5.0,
        backoff_max_s=2.0,
    )
    config = dataclasses.replace(rig.config(), schema_hold=SchemaHold(True, 3600, retry_s=1))
    loader = StreamingLoader(spark, config, settings)
    query = loader.start()
    try:
        query.processAllAvailable()
        started = time.monotonic()
        while time.monotonic() - started < HOLDING_S and query.isActive:
            time.sleep(5)
        found = (
            rig.counts(),
            loader.holding.parked,
            loader.readiness.details().get("missingSchemas"),
            loader.readiness(),
            (query.isActive, query.exception()),
        )
    finally:
        loader.stop(30)

    assert found == ((6, 6), 3, [MISSING], True, (True, None))
