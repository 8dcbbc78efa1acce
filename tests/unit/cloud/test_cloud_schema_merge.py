"""merge_schema widens BigQuery schema JSON without touching existing columns."""

from __future__ import annotations

from plowline_cloud.table_schema import merge_schema
from plowline_core.schema.field import Field, FieldType, Mode

CURRENT = [
    {"name": "event_id", "type": "STRING", "mode": "REQUIRED", "description": "the id"},
    {
        "name": "rec",
        "type": "RECORD",
        "mode": "NULLABLE",
        "description": "r",
        "fields": [
            {"name": "a", "type": "INTEGER", "mode": "NULLABLE"},
        ],
    },
]


def test_new_column_is_appended() -> None:
    """A new column goes last; existing columns come back exactly as given."""
    merged, changed = merge_schema(CURRENT, [Field("app_id", FieldType.STRING)])
    expected = (
        [*CURRENT, {"name": "app_id", "type": "STRING", "mode": "NULLABLE"}],
        (Field("app_id", FieldType.STRING),),
    )
    assert expected == (merged, changed)


def test_existing_column_is_skipped() -> None:
    """A field that exists by name (any case) changes nothing."""
    expected = (CURRENT, ())
    assert expected == merge_schema(CURRENT, [Field("EVENT_ID", FieldType.STRING, Mode.REQUIRED)])


def test_retype_is_never_done() -> None:
    """A field that exists with another type is left alone."""
    expected = (CURRENT, ())
    assert expected == merge_schema(CURRENT, [Field("event_id", FieldType.INTEGER)])


def test_nested_field_keeps_record_keys() -> None:
    """A new sub-field widens its RECORD, which keeps its description."""
    wider = Field(
        "rec",
        FieldType.RECORD,
        Mode.NULLABLE,
        (Field("a", FieldType.INTEGER), Field("b", FieldType.STRING)),
    )
    merged, _ = merge_schema(CURRENT, [wider])
    expected = {
        **CURRENT[1],
        "fields": [*CURRENT[1]["fields"], {"name": "b", "type": "STRING", "mode": "NULLABLE"}],
    }
    assert expected == merged[1]


def test_required_addition_is_relaxed() -> None:
    """A new column asked for as REQUIRED is added NULLABLE (BigQuery only adds NULLABLE)."""
    _, changed = merge_schema(CURRENT, [Field("x", FieldType.STRING, Mode.REQUIRED)])
    expected = (Field("x", FieldType.STRING),)
    assert expected == changed
