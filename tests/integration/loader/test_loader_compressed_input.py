"""Compressed batches through the running loader: gzip and zstd load like plain lines.

One backlog per mode: plain lines, a gzip batch and a zstd batch of lines, a batch with
one record over ``maxBytesSinglePayload``, a corrupt zstd stream and a gzip batch of
format version 2. The loader runs until the backlog is drained; then every line of every
batch is in the table once, and the three failures are 2.x's failed events on the
bad-rows topic, each valid against its Iglu Central schema.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from jsonschema import Draft4Validator, FormatChecker
from plowline_core.event.compressed import Compression, write_batch
from plowline_core.iglu.key import SchemaKey
from plowline_core.testing.tsv import enriched_line
from plowline_loader.compressed_input import Decompression
from pyspark.sql import SparkSession

if TYPE_CHECKING:
    from conftest import ModeRig

LIMIT = 4000  # maxBytesSinglePayload here: an enriched line is ~1 KB


def _lines(count: int) -> list[bytes]:
    return [enriched_line(event_id=str(uuid.uuid4())).encode() for _ in range(count)]


def _backlog() -> tuple[list[bytes], int]:
    """Return the messages to publish and how many rows they hold."""
    plain, gzipped, zstd, beside = _lines(20), _lines(40), _lines(40), _lines(3)
    oversized = write_batch([*beside[:2], beside[2] + b"x" * LIMIT], Compression.GZIP)
    version_2 = gzip.compress(b"\x02\x01" + write_batch([], Compression.GZIP)[2:])
    messages = [
        *plain[:10],
        write_batch(gzipped, Compression.GZIP),
        write_batch(zstd, Compression.ZSTD),
        oversized,
        Compression.ZSTD.signature + b"\x00not a zstd frame at all",
        version_2,
        *plain[10:],
    ]
    return messages, len(plain) + len(gzipped) + len(zstd) + 2


@pytest.mark.parametrize(
    "load",
    [
        pytest.param({"mode": "STREAMING_INSERTS", "retry": False}, id="streaming-inserts"),
        pytest.param(
            {"mode": "STORAGE_WRITE_API", "stream": "exactly-once"}, id="write-api-exactly-once"
        ),
    ],
)
def test_compressed_batches_load_like_plain_lines(
    mode_rig: Callable[[dict[str, Any]], ModeRig],  # first: the stack starts before Spark
    spark: SparkSession,
    iglu_central_dir: Path,
    load: dict[str, Any],
) -> None:
    """Every record lands once; the oversized record, the corrupt stream and version 2 fail as 2.x's."""
    rig = mode_rig(load)
    messages, rows = _backlog()
    rig.publish_bodies([(data, {}) for data in messages])
    config = dataclasses.replace(rig.config(), decompression=Decompression(LIMIT, 16_000))
    loader, running = rig.load_backlog(spark, max_messages=4, config=config)

    totals = loader.writer.totals
    bad = [json.loads(data) for data in rig.bad_rows()]
    kinds = Counter(document["schema"].split("/")[1] for document in bad)
    expected_kinds = Counter({"loader_parsing_error": 2, "size_violation": 1})
    assert ((True, None), (rows, 3, 0), (rows, rows), expected_kinds) == (
        running,
        (totals.good, totals.bad, totals.failed),
        rig.counts(),
        kinds,
    )
    assert [[]] * len(bad) == [_schema_errors(iglu_central_dir, document) for document in bad]


def _schema_errors(iglu_central_dir: Path, document: dict[str, Any]) -> list[str]:
    key = SchemaKey.parse(document["schema"])
    schema = json.loads((iglu_central_dir / "schemas" / key.to_path()).read_text())
    validator = Draft4Validator(schema, format_checker=FormatChecker())
    return [error.message for error in validator.iter_errors(document["data"])]
