"""Exactly-once per record of a compressed batch: each record keyed by its own event id.

In exactly-once mode the ``pubsub-records`` source opens a compressed batch into its
records before the shuffle, so two batches (or a batch and a plain line) holding one
event id meet in one task and the id is written once; a batch's delivery, its records
spread over the tasks, is acked by the driver only once every record is durable. The
backlogs are built so that the batches' whole bytes (the key before records were
keyed) send the sharing messages to different tasks of two. The unkind cases: a record
not durable (its bad row cannot be published) and a record held for a missing schema
keep their batch unacked until they are durable, and nothing is lost or written twice.
"""

from __future__ import annotations

import dataclasses
import json
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from plowline_cloud.clients import publisher_client
from plowline_core.event.compressed import Compression, write_batch
from plowline_core.testing.tsv import enriched_line, with_entities
from plowline_loader.batch.schema_hold import SchemaHold
from plowline_loader.streaming import StreamingLoader, StreamSettings, by_event_id
from pyspark.sql import SparkSession, functions
from pyspark.sql.types import BinaryType, IntegerType, StructField, StructType
from support.stack import pull_all
from support.timing import wait_for

if TYPE_CHECKING:
    from conftest import ModeRig

EXACTLY_ONCE = {"mode": "STORAGE_WRITE_API", "stream": "exactly-once"}
ACK_DEADLINE_S = 10
_SCHEMA = StructType(
    [StructField("n", IntegerType(), False), StructField("data", BinaryType(), False)]
)


def _line(event_id: str, title: str = "page") -> bytes:
    return enriched_line(event_id=event_id, page_title=title).encode()


def _ids(count: int) -> list[str]:
    return [str(uuid.uuid4()) for _ in range(count)]


def _whole_message_tasks(spark: SparkSession, messages: list[bytes]) -> list[int]:
    """Return the task of two each message went to when keyed by its whole bytes."""
    frame = spark.createDataFrame(list(enumerate(messages)), _SCHEMA)
    keyed = by_event_id(frame, 2).select("n", functions.spark_partition_id().alias("p"))
    return [int(row["p"]) for row in sorted(keyed.collect(), key=lambda row: int(row["n"]))]


def _apart(spark: SparkSession) -> tuple[list[bytes], int]:
    """Return a gzip and a zstd batch sharing one id, and a plain line sharing another
    with the zstd batch, each pair in two tasks when keyed whole; and the distinct ids."""
    while True:
        shared, twin = _ids(2)
        gzipped = [_line(shared, "gzip"), *map(_line, _ids(29))]
        zstd = [_line(shared, "zstd"), _line(twin, "zstd"), *map(_line, _ids(28))]
        messages = [
            write_batch(gzipped, Compression.GZIP),
            write_batch(zstd, Compression.ZSTD),
            _line(twin, "plain"),
            *map(_line, _ids(10)),
        ]
        tasks = _whole_message_tasks(spark, messages)
        if tasks[0] != tasks[1] and tasks[1] != tasks[2]:
            return messages, 1 + 29 + 1 + 28 + 10


def _settings(tmp_path: Path) -> StreamSettings:
    return StreamSettings(
        checkpoint=str(tmp_path / "checkpoint"),
        max_messages=100,
        pull_timeout_s=0.5,
        ack_deadline_s=ACK_DEADLINE_S,
        lease_interval_s=3.0,
        backoff_initial_s=0.2,
        backoff_max_s=0.5,
    )


def _redelivered(rig: ModeRig) -> list[bytes]:
    """Return what the input subscription delivers once every lease has lapsed."""
    time.sleep(ACK_DEADLINE_S + 2)
    target = rig.stack.endpoints.pubsub_target
    return pull_all(target, rig.config().input_subscription, timeout=3)


def test_batches_sharing_event_ids_write_each_id_once(
    mode_rig: Callable[[dict[str, Any]], ModeRig],  # first: the stack starts before Spark
    spark: SparkSession,
    tmp_path: Path,
) -> None:
    """Two batches and a plain line sharing ids, in one micro-batch: each id once, all acked."""
    rig = mode_rig(EXACTLY_ONCE)
    messages, distinct = _apart(spark)
    rig.publish_bodies([(data, {}) for data in messages])
    loader = StreamingLoader(spark, rig.config(), _settings(tmp_path))
    query = loader.start()
    try:
        query.processAllAvailable()
    finally:
        loader.stop(30)
    acked = loader.writer.split_deliveries
    expected = ((distinct, distinct), (2, 0, 0), [])
    assert expected == (
        rig.counts(),
        (acked["acked"], acked["nacked"], acked["unsettled"]),
        _redelivered(rig),
    )


def test_a_record_not_durable_leaves_its_batch_unacked_until_it_is(
    mode_rig: Callable[[dict[str, Any]], ModeRig],
    spark: SparkSession,
    tmp_path: Path,
) -> None:
    """A batch's bad record whose bad row cannot be published: nacked, redelivered, each id once."""
    rig = mode_rig(EXACTLY_ONCE)
    config = rig.config()
    topic = f"bad-rows-{uuid.uuid4().hex[:8]}"  # not created yet: publishing it fails
    config = dataclasses.replace(
        config, bigquery=dataclasses.replace(config.bigquery, bad_rows=topic)
    )
    good = [_line(event_id) for event_id in _ids(40)]
    batch = write_batch([*good[:20], b"not an enriched line", *good[20:]], Compression.ZSTD)
    rig.publish_bodies([(batch, {})])
    loader = StreamingLoader(spark, config, _settings(tmp_path))
    query = loader.start()
    try:
        retried = wait_for(lambda: loader.writer.transient_failures >= 2)
        held_back = dict(loader.writer.split_deliveries)
        publisher_client(rig.stack.endpoints.pubsub_target).create_topic(
            request={"name": config.topic(topic)}
        )
        # The nacked delivery comes back in a later micro-batch, and is acked there.
        wait_for(lambda: loader.writer.split_deliveries["acked"] >= 2)
        query.processAllAvailable()
    finally:
        loader.stop(30)
    expected = (True, 0, True, (40, 40), [])
    assert expected == (
        retried,
        held_back.get("acked", 0),
        held_back.get("nacked", 0) >= 2,
        rig.counts(),
        _redelivered(rig),
    )


MISSING = "iglu:com.acme/missing/jsonschema/1-0-0"
BOUND_S = 20.0


def test_a_held_record_hands_its_batch_back_until_the_hold_ends(
    mode_rig: Callable[[dict[str, Any]], ModeRig],
    spark: SparkSession,
    tmp_path: Path,
    eventually: Callable[..., Any],
) -> None:
    """The batch's other records land at once, it is handed back, then failed and acked."""
    rig = mode_rig(EXACTLY_ONCE)
    held = with_entities(contexts=[(MISSING, {"a": 1})], event_id=str(uuid.uuid4())).encode()
    good = [_line(event_id) for event_id in _ids(30)]
    rig.publish_bodies([(write_batch([*good[:15], held, *good[15:]], Compression.GZIP), {})])
    published = time.monotonic()
    config = dataclasses.replace(rig.config(), schema_hold=SchemaHold(True, BOUND_S, retry_s=1))
    loader = StreamingLoader(spark, config, _settings(tmp_path))
    query = loader.start()
    try:
        query.processAllAvailable()
        first = (
            rig.counts(),
            loader.writer.split_deliveries["acked"],
            loader.writer.split_deliveries["later"] >= 1,
            time.monotonic() - published < BOUND_S,
        )
        failed = eventually(rig.bad_rows, timeout=BOUND_S + 60)
        acked = eventually(lambda: loader.writer.split_deliveries["acked"], timeout=30)
    finally:
        loader.stop(30)
    held_at_first = ((30, 30), 0, True, True)
    assert held_at_first == first
    expected = (["loader_iglu_error"], 1, (30, 30), [])
    assert expected == (
        [json.loads(data)["schema"].split("/")[1] for data in failed],
        acked,
        rig.counts(),
        _redelivered(rig),
    )
