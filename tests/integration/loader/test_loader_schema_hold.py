"""exitOnMissingIgluSchema through the running loader: held, named in /readyz, failed after the bound.

Five plain lines and one whose context's schema no registry has (the rig's Iglu
repository is empty). With the hold on (a bound of a few seconds, a retry of one), the
five land at once while the sixth is neither a row nor a failed event and ``/readyz``
names its schema; the loader keeps running and, once the bound has passed, the sixth
comes back and is one ``loader_iglu_error`` on the bad-rows topic.
"""

from __future__ import annotations

import dataclasses
import json
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from plowline_core.testing.tsv import enriched_line, with_entities
from plowline_loader.batch.schema_hold import SchemaHold
from plowline_loader.streaming import StreamingLoader, StreamSettings
from pyspark.sql import SparkSession

if TYPE_CHECKING:
    from conftest import ModeRig

MISSING = "iglu:com.acme/missing/jsonschema/1-0-0"
BOUND_S = 20.0


def test_a_missing_schema_holds_its_event_then_fails_it_after_the_bound(
    mode_rig: Callable[[dict[str, Any]], ModeRig],  # first: the stack starts before Spark
    spark: SparkSession,
    tmp_path: Path,
    eventually: Callable[..., Any],
) -> None:
    """The other events land at once; the held one is named in /readyz, then failed once."""
    rig = mode_rig({"mode": "STREAMING_INSERTS", "retry": False})
    held = with_entities(contexts=[(MISSING, {"a": 1})], event_id=str(uuid.uuid4())).encode()
    plain = [enriched_line(event_id=str(uuid.uuid4())).encode() for _ in range(5)]
    rig.publish_bodies([(data, {}) for data in [*plain, held]])
    published = time.monotonic()
    settings = StreamSettings(
        checkpoint=str(tmp_path / "checkpoint"),
        pull_timeout_s=0.5,
        ack_deadline_s=30,
        lease_interval_s=5.0,
        backoff_max_s=2.0,
    )
    config = dataclasses.replace(rig.config(), schema_hold=SchemaHold(True, BOUND_S, retry_s=1))
    loader = StreamingLoader(spark, config, settings)
    query = loader.start()
    try:
        query.processAllAvailable()
        first = (
            loader.writer.totals.bad,
            loader.readiness.details().get("missingSchemas"),
            loader.readiness(),
            time.monotonic() - published < BOUND_S,
            rig.counts(),
        )
        failed = eventually(rig.bad_rows, timeout=BOUND_S + 60)
        running = (query.isActive, query.exception())
    finally:
        loader.stop(30)

    held_at_first = (0, [MISSING], True, True, (5, 5))
    assert held_at_first == first
    failed_after_the_bound = ((True, None), ["loader_iglu_error"], (5, 5))
    assert failed_after_the_bound == (
        running,
        [json.loads(data)["schema"].split("/")[1] for data in failed],
        rig.counts(),
    )
