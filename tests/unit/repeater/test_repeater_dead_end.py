"""Dead-end bad rows: their content, their buffer and their object names."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
import pytest
from jsonschema import Draft4Validator
from plowline_core.badrows import Processor
from plowline_core.messages import FailedInsert, MessageError
from plowline_core.ports import InsertFailure, InsertReason, Row
from plowline_repeater.dead_end import (
    DeadEndBuffer,
    object_name,
    parsing_error_row,
    runtime_error_row,
)

NOW = datetime(2026, 11, 22, 5, 13, 7, 250000, tzinfo=UTC)
PROCESSOR = Processor("plowline-repeater", "0.1.0")
ROW = {"event_id": "e1", "etl_tstamp": "2026-11-22T05:00:00+00:00", "x": 1}


@pytest.fixture(scope="module")
def recovery_schema(conformance_dir: Path) -> dict[str, object]:
    """The upstream loader_recovery_error/1-0-0 JSON Schema."""
    path = (
        conformance_dir
        / "vectors/badrows/com.snowplowanalytics.snowplow.badrows/loader_recovery_error/jsonschema/1-0-0"
    )
    schema: dict[str, object] = orjson.loads(path.read_bytes())
    return schema


def test_runtime_error_row_validates(recovery_schema: dict[str, object]) -> None:
    """A row BigQuery kept refusing becomes a valid loader_recovery_error."""
    failure = InsertFailure(Row("e1", ROW), InsertReason.INVALID, "bad value", "x")
    row = runtime_error_row(FailedInsert("e1", NOW, ROW), failure).to_dict(PROCESSOR)
    Draft4Validator(recovery_schema).validate(row["data"])
    expected = ({"message": "bad value", "location": "x", "reason": "invalid"}, ROW)
    assert expected == (row["data"]["failure"]["error"], orjson.loads(row["data"]["payload"]))


def test_parsing_error_row_validates(recovery_schema: dict[str, object]) -> None:
    """A message that is not a failed insert becomes a valid parsing loader_recovery_error."""
    row = parsing_error_row(b"nope", MessageError("not JSON")).to_dict(PROCESSOR)
    Draft4Validator(recovery_schema).validate(row["data"])
    expected = ({"message": "not JSON", "location": []}, "nope")
    assert expected == (row["data"]["failure"]["error"], row["data"]["payload"])


def test_object_name_is_partitioned_by_hour() -> None:
    """Objects live under YYYY/MM/DD/HH and carry the UTC time they were written."""
    expected = "2026/11/22/05/20261122T051307.250Z-u1.ndjson"
    assert expected == object_name(NOW, "u1")


def test_buffer_is_ready_at_its_size() -> None:
    """A full buffer is ready at once."""
    buffer: DeadEndBuffer[str] = DeadEndBuffer(size=2, window=30)
    buffer.add("m1", b"a", NOW)
    buffer.add("m2", b"b", NOW)
    assert buffer.ready(NOW)


def test_buffer_is_ready_after_its_window() -> None:
    """A partial buffer is ready once the window since its first row passed."""
    buffer: DeadEndBuffer[str] = DeadEndBuffer(size=20, window=30)
    buffer.add("m1", b"a", NOW)
    expected = (False, True)
    actual = (buffer.ready(NOW + timedelta(seconds=29)), buffer.ready(NOW + timedelta(seconds=30)))
    assert expected == actual


def test_take_returns_items_and_ndjson() -> None:
    """Taking empties the buffer and returns its messages with the object body."""
    buffer: DeadEndBuffer[str] = DeadEndBuffer(size=20, window=30)
    buffer.add("m1", b"a", NOW)
    buffer.add("m2", b"b", NOW)
    expected = ((["m1", "m2"], b"a\nb\n"), 0)
    actual = (buffer.take(), len(buffer))
    assert expected == actual
