"""Exactly-once keying (``streaming.by_event_id``) on real Spark: any bytes keyed, never a failed query.

Spark 4 evaluates SQL in ANSI mode: an expression that raises on one row fails the whole
micro-batch, and the streaming query with it, again after every restart (the message is
redelivered). These tests run the keying over hostile message bodies in the warmed
session and read back where every row went. The key is the ledger's (the canonical,
lower-case id): two spellings of one id meet in one task, and land as one row.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from plowline_core.testing.tsv import enriched_line
from plowline_loader.batch.event_key import event_id_key
from plowline_loader.streaming import StreamingLoader, StreamSettings, by_event_id, key_column
from pyspark.sql import SparkSession, functions
from pyspark.sql.types import BinaryType, IntegerType, StructField, StructType

if TYPE_CHECKING:
    from conftest import ModeRig

_SCHEMA = StructType(
    [StructField("n", IntegerType(), False), StructField("data", BinaryType(), False)]
)
EVENT_ID = "2d6e6b1c-7a3f-4c4e-9d1a-0f6f3f0c9b11"

HOSTILE = [
    pytest.param(b"", id="empty"),
    pytest.param(b"no tabs at all", id="no-tabs"),
    pytest.param(b"a\tb\tc", id="three-fields"),
    pytest.param(b"0\t1\t2\t3\t4\t5", id="six-fields"),
    pytest.param(b"\xff\xfe\x80\t\xc3", id="not-utf8"),
    pytest.param(b"0\t1\t2\t3\t4\t5\t\xff\xfe-event\t7", id="not-utf8-event-id"),
    pytest.param(b"\t" * 200, id="only-tabs"),
    pytest.param(b"x" * 10_000_000, id="ten-megabytes"),
]


def _partitions(spark: SparkSession, bodies: list[bytes]) -> list[tuple[int, int]]:
    """Return (row number, partition) for each body after keying over two partitions."""
    frame = spark.createDataFrame(list(enumerate(bodies)), _SCHEMA)
    keyed = by_event_id(frame, 2).select("n", functions.spark_partition_id().alias("p"))
    return sorted((int(row["n"]), int(row["p"])) for row in keyed.collect())


@pytest.mark.parametrize("body", HOSTILE)
def test_hostile_body_is_keyed_without_failing_the_batch(spark: SparkSession, body: bytes) -> None:
    """A body with too few fields, no tabs or invalid UTF-8 is keyed and kept, with its batch."""
    good = enriched_line(event_id=EVENT_ID).encode()

    placed = _partitions(spark, [good, body, good])

    expected = [0, 1, 2]
    assert expected == [n for n, _ in placed]


def test_every_copy_of_an_event_id_meets_in_one_task(spark: SparkSession) -> None:
    """Lines sharing an event id (copies, or different lines) land in one partition."""
    same = [
        enriched_line(event_id=EVENT_ID).encode(),
        enriched_line(event_id=EVENT_ID, page_title="other").encode(),
        enriched_line(event_id=EVENT_ID).encode() + b"\xff",
    ]
    others = [enriched_line(event_id=f"{EVENT_ID[:-2]}{i:02d}").encode() for i in range(20)]

    placed = dict(_partitions(spark, same + others))

    expected = (1, 2)  # the three copies in one partition; the batch over both
    assert expected == (len({placed[0], placed[1], placed[2]}), len(set(placed.values())))


def test_copies_of_a_short_line_meet_in_one_task(spark: SparkSession) -> None:
    """Redelivered copies of a line without an event id field land in the same partition."""
    short = [b"short\tline", b"other short", b"\xff\xfe"]
    bodies = short + short + [f"spread-{i}".encode() for i in range(20)]

    placed = dict(_partitions(spark, bodies))

    assert [placed[i] for i in range(3)] == [placed[i + 3] for i in range(3)]


def _spellings(count: int) -> list[tuple[str, str]]:
    """Return ``count`` event ids, each in lower and in upper case."""
    ids = [str(uuid.uuid4()) for _ in range(count)]
    return [(event_id, event_id.upper()) for event_id in ids]


def test_every_spelling_of_an_event_id_meets_in_one_task(spark: SparkSession) -> None:
    """Twenty ids, each spelled lower and upper: each pair lands in one partition of two."""
    pairs = _spellings(20)
    bodies = [enriched_line(event_id=spelling).encode() for pair in pairs for spelling in pair]

    placed = dict(_partitions(spark, bodies))

    expected = [1] * len(pairs)
    assert expected == [len({placed[2 * i], placed[2 * i + 1]}) for i in range(len(pairs))]


def test_the_spark_key_is_the_reference_key(spark: SparkSession) -> None:
    """``key_column`` computes ``event_id_key`` on real Spark, line for line."""
    bodies = [
        enriched_line(event_id=spelling).encode() for pair in _spellings(5) for spelling in pair
    ] + [b"Short\tLine", b"", b"NO TABS"]
    frame = spark.createDataFrame(list(enumerate(bodies)), _SCHEMA)
    keys = {int(r["n"]): r["k"] for r in frame.select("n", key_column().alias("k")).collect()}
    expected = [event_id_key(body) for body in bodies]
    assert expected == [keys[n] for n in range(len(bodies))]


def test_two_spellings_of_one_id_land_as_one_row_in_exactly_once_mode(
    spark: SparkSession, mode_rig: Callable[[dict[str, Any]], ModeRig], tmp_path: Path
) -> None:
    """Twenty ids published in two spellings each, in one micro-batch: twenty rows, not forty."""
    rig = mode_rig({"mode": "STORAGE_WRITE_API", "stream": "exactly-once"})
    pairs = _spellings(20)
    rig.publish([spelling for pair in pairs for spelling in pair])
    settings = StreamSettings(checkpoint=str(tmp_path / "checkpoint"), pull_timeout_s=0.5)
    loader = StreamingLoader(spark, rig.config(), settings)
    query = loader.start()
    try:
        query.processAllAvailable()
    finally:
        loader.stop(30)
    expected = (len(pairs), len(pairs))
    assert expected == rig.counts()
