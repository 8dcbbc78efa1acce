"""Tables with columns of every BigQuery type: schema patches and Write API rows."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from google.protobuf import descriptor_pb2
from plowline_cloud.events_table import field_differences
from plowline_cloud.table_schema import merge_schema
from plowline_cloud.write_api_proto import RowEncoder, descriptor_for
from plowline_core.schema.field import Field, FieldType, Mode

FDP = descriptor_pb2.FieldDescriptorProto
TAGS = {"names": ["projects/p/locations/eu/taxonomies/1/policyTags/2"]}
HAND_MADE = [
    {"name": "event_id", "type": "STRING", "mode": "REQUIRED"},
    {"name": "raw", "type": "BYTES", "mode": "NULLABLE", "maxLength": "16"},
    {"name": "big", "type": "BIGNUMERIC", "mode": "NULLABLE", "precision": "50", "scale": "9"},
    {"name": "at_time", "type": "TIME", "mode": "NULLABLE"},
    {"name": "local_at", "type": "DATETIME", "mode": "NULLABLE", "description": "by hand"},
    {"name": "place", "type": "GEOGRAPHY", "mode": "NULLABLE", "policyTags": TAGS},
    {"name": "doc", "type": "JSON", "mode": "NULLABLE"},
    {"name": "span", "type": "RANGE", "mode": "NULLABLE", "rangeElementType": {"type": "DATE"}},
    {"name": "wait", "type": "INTERVAL", "mode": "NULLABLE"},
    {"name": "later", "type": "SOMETHING_NEW", "mode": "NULLABLE"},
    {
        "name": "contexts_a",
        "type": "RECORD",
        "mode": "REPEATED",
        "fields": [
            {"name": "x", "type": "STRING", "mode": "NULLABLE", "policyTags": TAGS},
            {"name": "amount", "type": "BIGNUMERIC", "mode": "NULLABLE", "precision": "60"},
        ],
    },
]
FIELDS = tuple(Field.from_api(column) for column in HAND_MADE)


def test_patch_adds_a_column_and_sends_every_other_back_as_read() -> None:
    """A new column is appended; every hand-made column goes back exactly as BigQuery gave it."""
    merged, changed = merge_schema(HAND_MADE, [Field("app_id", FieldType.STRING)])
    expected = [*HAND_MADE, {"name": "app_id", "type": "STRING", "mode": "NULLABLE"}]
    assert (expected, (Field("app_id", FieldType.STRING),)) == (merged, changed)


def test_patch_into_a_record_keeps_its_sub_fields_options() -> None:
    """Widening a RECORD keeps its sub-fields' policy tags and BIGNUMERIC precision."""
    needed = Field(
        "contexts_a",
        FieldType.RECORD,
        Mode.REPEATED,
        (Field("x", FieldType.STRING), Field("y", FieldType.INTEGER)),
    )
    merged, _ = merge_schema(HAND_MADE, [needed])
    record = HAND_MADE[-1]
    widened = {
        **record,
        "fields": [*record["fields"], {"name": "y", "type": "INTEGER", "mode": "NULLABLE"}],
    }
    assert [*HAND_MADE[:-1], widened] == merged


def test_patch_never_turns_bignumeric_into_numeric() -> None:
    """A needed NUMERIC where the table has BIGNUMERIC changes nothing (a conflict, not a patch)."""
    needed = Field(
        "contexts_a",
        FieldType.RECORD,
        Mode.REPEATED,
        (Field("amount", FieldType.NUMERIC),),
    )
    assert merge_schema(HAND_MADE, [needed]) == (HAND_MADE, ())


def test_differences_name_the_type_as_bigquery_does() -> None:
    """An existing table's unknown column type is reported by its BigQuery name."""
    wanted = (Field("later", FieldType.STRING),)
    assert field_differences(FIELDS, wanted) == [
        "later is SOMETHING_NEW NULLABLE, expected STRING NULLABLE"
    ]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param("raw", FDP.TYPE_BYTES, id="bytes"),
        pytest.param("big", FDP.TYPE_STRING, id="bignumeric"),
        pytest.param("at_time", FDP.TYPE_STRING, id="time"),
        pytest.param("local_at", FDP.TYPE_STRING, id="datetime"),
        pytest.param("place", FDP.TYPE_STRING, id="geography"),
        pytest.param("wait", FDP.TYPE_STRING, id="interval"),
    ],
)
def test_descriptor_maps_every_writable_type(name: str, expected: int) -> None:
    """Each type the Write API takes as a scalar gets its proto type."""
    by_name = {field.name: field.type for field in descriptor_for(FIELDS).field}
    assert expected == by_name[name]


def test_descriptor_leaves_out_range_and_unknown_columns() -> None:
    """RANGE and unknown-type columns are not in the descriptor (no value is ever sent)."""
    names = {field.name for field in descriptor_for(FIELDS).field}
    assert set() == names & {"span", "later"}


def test_rows_encode_beside_columns_of_every_type() -> None:
    """A row that does not name the hand-made columns encodes as usual."""
    encoder = RowEncoder(FIELDS)
    message = encoder._message_class.FromString(encoder.encode({"event_id": "e1"}))
    assert message.event_id == "e1"


def test_values_of_hand_made_types_encode_as_the_write_api_takes_them() -> None:
    """BYTES base64 text becomes bytes; TIME, DATETIME, GEOGRAPHY, BIGNUMERIC stay text."""
    encoder = RowEncoder(FIELDS)
    data = {
        "event_id": "e1",
        "raw": base64.b64encode(b"\x00\x01").decode(),
        "big": "1.5",
        "at_time": "12:00:00",
        "local_at": "2026-11-24T12:00:00",
        "place": "POINT(1 2)",
        "wait": "P1D",
    }
    message = encoder._message_class.FromString(encoder.encode(data))
    actual = (message.raw, message.big, message.at_time, message.local_at, message.place)
    assert actual == (b"\x00\x01", "1.5", "12:00:00", "2026-11-24T12:00:00", "POINT(1 2)")


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param({"span": "[2026-01-01, 2026-02-01)"}, "span: the column is RANGE", id="range"),
        pytest.param({"later": 1}, "later: the column is SOMETHING_NEW", id="unknown"),
        pytest.param({"raw": "not base64!"}, "raw: cannot convert", id="bad-base64"),
        pytest.param({"at_time": 12}, "at_time: cannot convert 12 to TIME", id="time-not-text"),
    ],
)
def test_values_that_cannot_be_written_fail_their_row(data: dict[str, Any], expected: str) -> None:
    """A value the Write API cannot carry is a ValueError naming the column (one bad row)."""
    with pytest.raises(ValueError, match=expected):
        RowEncoder(FIELDS).encode({"event_id": "e1", **data})
