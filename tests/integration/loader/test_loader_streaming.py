"""The streaming loader on the local stack with real Spark: Pub/Sub in, BigQuery and topics out.

A :class:`StreamingLoader` runs in the test session's warmed Spark over a ``streaming_rig``
(``support.loader_rigs``: a fresh input topic, observation subscriptions on the output
topics, the ``com.acme`` schemas behind an HTTP registry that can fail on demand). The
loader run as a process (``plowline-loader run``: SIGKILL mid-stream, Ctrl-C) is tested in
``tests/e2e/loader/test_loader_streaming.py``.
"""

from __future__ import annotations

import json
import uuid

from plowline_core.messages import decode_types
from plowline_core.schema.entity import EntityType, ShredProperty
from plowline_core.testing.tsv import with_entities
from plowline_loader.streaming import StreamingLoader, StreamSettings
from pyspark.sql import SparkSession
from support.loader_rigs import NEW_THING, StreamingRig, ToggleRegistry, good_line
from support.timing import wait_for

PARSING_ERROR = "iglu:com.snowplowanalytics.snowplow.badrows/loader_parsing_error/jsonschema/2-0-0"


def _loader(spark: SparkSession, rig: StreamingRig) -> StreamingLoader:
    settings = StreamSettings(
        checkpoint=str(rig.root / "checkpoint"),
        max_messages=500,
        pull_timeout_s=0.5,
        ack_deadline_s=30,
        lease_interval_s=5.0,
        backoff_initial_s=0.5,
        backoff_max_s=2.0,
    )
    return StreamingLoader(spark, rig.config(), settings)


def _run_until_drained(loader: StreamingLoader) -> None:
    query = loader.start()
    try:
        query.processAllAvailable()
    finally:
        loader.stop(30)


def test_mixed_events_all_land_in_the_table(
    spark: SparkSession, streaming_rig: StreamingRig
) -> None:
    """2,000 events with mixed contexts all land in BigQuery, found by event id."""
    rig = streaming_rig
    ids = [str(uuid.uuid4()) for _ in range(2000)]
    rig.publish([good_line(event_id, n) for n, event_id in enumerate(ids)])
    loader = _loader(spark, rig)

    _run_until_drained(loader)

    landed = wait_for(lambda: len(rig.table_ids(set(ids))) == len(ids), 30, every_s=0.5)
    expected = (True, 2000, 2000)
    assert expected == (landed, loader.writer.totals.events_in, loader.writer.totals.good)


def test_bad_lines_end_as_parsing_bad_rows(
    spark: SparkSession, streaming_rig: StreamingRig
) -> None:
    """Lines that are not enriched TSV are published to badRows as loader_parsing_error."""
    rig = streaming_rig
    rig.publish(["not an enriched event", "still\tnot\tone"])

    _run_until_drained(_loader(spark, rig))

    schemas = sorted(json.loads(data)["schema"] for data in rig.drain("bad-rows"))
    expected = [PARSING_ERROR, PARSING_ERROR]
    assert expected == schemas


def test_event_without_a_column_publishes_its_type_and_fails_insert(
    spark: SparkSession, streaming_rig: StreamingRig
) -> None:
    """An event of a schema the table has no column for: its type is announced, its row failed."""
    rig = streaming_rig
    event_id = str(uuid.uuid4())
    rig.publish([with_entities(contexts=[(NEW_THING.to_uri(), {"n": 1})], event_id=event_id)])

    _run_until_drained(_loader(spark, rig))

    types = [decode_types(data) for data in rig.drain("types")]
    failed = [json.loads(data)["event_id"] for data in rig.drain("failed-inserts")]
    assert ([[EntityType(NEW_THING, ShredProperty.CONTEXTS)]], [event_id]) == (types, failed)


def test_registry_outage_holds_events_until_it_recovers(
    spark: SparkSession, streaming_rig: StreamingRig, toggle_registry: ToggleRegistry
) -> None:
    """While the registry answers 503 nothing lands and the loader is not ready; then all land."""
    rig, registry = streaming_rig, toggle_registry
    ids = [str(uuid.uuid4()) for _ in range(50)]
    registry.failing = True
    rig.publish([good_line(event_id, n) for n, event_id in enumerate(ids)])
    loader = _loader(spark, rig)
    query = loader.start()
    try:
        held = wait_for(lambda: loader.writer.transient_failures > 0, 60)
        during = (held, loader.readiness(), len(rig.table_ids(set(ids))))
        registry.failing = False
        query.processAllAvailable()
    finally:
        loader.stop(30)

    landed = wait_for(lambda: len(rig.table_ids(set(ids))) == len(ids), 30, every_s=0.5)
    expected: tuple[tuple[bool, bool, int], bool, list[bytes]] = ((True, False, 0), True, [])
    assert expected == (during, landed, rig.drain("bad-rows"))


def test_registry_outage_shows_in_readiness_until_it_recovers(
    spark: SparkSession, streaming_rig: StreamingRig, toggle_registry: ToggleRegistry
) -> None:
    """While the registry answers 503, /readyz's details name it and its error; then none."""
    rig, registry = streaming_rig, toggle_registry
    ids = [str(uuid.uuid4()) for _ in range(20)]
    registry.failing = True
    rig.publish([good_line(event_id, n) for n, event_id in enumerate(ids)])
    loader = _loader(spark, rig)
    query = loader.start()
    try:
        wait_for(lambda: loader.writer.transient_failures > 0, 60)
        during = loader.readiness.details()["registries"]
        registry.failing = False
        query.processAllAvailable()
        after = loader.readiness.details()["registries"]
    finally:
        loader.stop(30)

    expected = (["acme"], True, [])
    actual = (
        [outage["repository"] for outage in during],
        "answered 503" in during[0]["lastError"],
        after,
    )
    assert expected == actual
