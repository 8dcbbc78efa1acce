"""Protobuf rows for the Storage Write API: descriptor and value encodings."""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf import descriptor_pb2
from plowline_cloud.write_api_proto import RowEncoder, date_days, descriptor_for, timestamp_micros
from plowline_core.schema.field import Field, FieldType, Mode

FDP = descriptor_pb2.FieldDescriptorProto
FIELDS = (
    Field("event_id", FieldType.STRING, Mode.REQUIRED),
    Field("ts", FieldType.TIMESTAMP),
    Field("d", FieldType.DATE),
    Field("n", FieldType.NUMERIC),
    Field("j", FieldType.JSON),
    Field("tags", FieldType.STRING, Mode.REPEATED),
    Field("rec", FieldType.RECORD, fields=(Field("a", FieldType.INTEGER),)),
)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param("ts", FDP.TYPE_INT64, id="timestamp-int64"),
        pytest.param("d", FDP.TYPE_INT32, id="date-int32"),
        pytest.param("n", FDP.TYPE_STRING, id="numeric-string"),
        pytest.param("j", FDP.TYPE_STRING, id="json-string"),
        pytest.param("rec", FDP.TYPE_MESSAGE, id="record-message"),
    ],
)
def test_descriptor_maps_bigquery_types(name: str, expected: int) -> None:
    """Each BigQuery type gets the proto type the Write API expects."""
    fields = {f.name: f.type for f in descriptor_for(FIELDS).field}
    assert expected == fields[name]


def test_descriptor_nests_record_types() -> None:
    """RECORDs become nested types so the descriptor is self-contained."""
    descriptor = descriptor_for(FIELDS)
    assert [nested.name for nested in descriptor.nested_type] == ["R7_rec"]


def test_repeated_columns_are_repeated_fields() -> None:
    """REPEATED columns get the repeated label."""
    labels = {f.name: f.label for f in descriptor_for(FIELDS).field}
    assert labels["tags"] == FDP.LABEL_REPEATED


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param("1970-01-01T00:00:01.000001Z", 1_000_001, id="iso-z"),
        pytest.param("2024-05-01T12:00:00+02:00", 1_714_557_600_000_000, id="offset"),
        pytest.param(1.5, 1_500_000, id="seconds"),
    ],
)
def test_timestamps_are_epoch_micros(value: Any, expected: int) -> None:
    """TIMESTAMP values are microseconds since the epoch."""
    assert expected == timestamp_micros(value)


def test_dates_are_epoch_days() -> None:
    """DATE values are days since 1970-01-01."""
    assert date_days("2024-05-01") == 19_844


def test_encoded_row_decodes_to_the_same_values() -> None:
    """A row round-trips through the encoder's message class."""
    encoder = RowEncoder(FIELDS)
    data = {"event_id": "e1", "tags": ["a", "b"], "rec": {"a": 3}, "j": {"k": 1}, "n": 1.25}
    message = encoder._message_class.FromString(encoder.encode(data))
    actual = (message.event_id, list(message.tags), message.rec.a, message.j, message.n)
    assert actual == ("e1", ["a", "b"], 3, '{"k":1}', "1.25")


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param({"rec": {"a": "x"}}, "rec.a: cannot convert 'x' to INTEGER", id="wrong-type"),
        pytest.param({"nope": 1}, "no such field: nope.", id="unknown"),
        pytest.param({"tags": "a"}, "tags: expected an array", id="not-array"),
    ],
)
def test_values_that_do_not_fit_are_reported(data: dict[str, Any], expected: str) -> None:
    """A value that does not fit its column raises ValueError naming the column."""
    with pytest.raises(ValueError) as raised:
        RowEncoder(FIELDS).encode(data)
    assert str(raised.value).startswith(expected)
