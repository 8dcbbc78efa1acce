"""JSON Schema → BigQuery field beyond the upstream vectors, and the entity column."""

from __future__ import annotations

from typing import Any

import pytest
from plowline_core.iglu.key import SchemaKey
from plowline_core.schema.columns import SCHEMA_VERSION_FIELD, column_field
from plowline_core.schema.entity import ColumnMode, ShredProperty
from plowline_core.schema.field import Field, FieldType, Mode
from plowline_core.schema.mapping import field_from_schema, normalized

KEY = SchemaKey.parse("iglu:com.acme/thing/jsonschema/1-0-0")
OBJECT: dict[str, Any] = {
    "type": "object",
    "properties": {"userId": {"type": "string"}, "count": {"type": "integer"}},
    "required": ["userId"],
}


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        pytest.param({"$ref": "#/definitions/x"}, Field("x", FieldType.STRING), id="ref-is-string"),
        pytest.param({"type": "weird"}, Field("x", FieldType.STRING), id="unknown-type"),
        pytest.param(["not", "an", "object"], Field("x", FieldType.STRING), id="not-an-object"),
        pytest.param({"type": "null"}, Field("x", FieldType.STRING), id="null-type"),
        pytest.param(
            {"type": "array", "items": True},
            Field("x", FieldType.STRING, Mode.REPEATED),
            id="items-true",
        ),
        pytest.param({"enum": [True, False]}, Field("x", FieldType.STRING), id="boolean-enum"),
    ],
)
def test_field_from_schema_v1_reads_odd_schemas_as_string(schema: Any, expected: Field) -> None:
    """Constructs the v1 rules do not know map to STRING instead of failing."""
    assert expected == field_from_schema("x", schema, False)


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        pytest.param({"$ref": "#/x"}, Field("x", FieldType.JSON), id="ref-is-json"),
        pytest.param(
            {"type": "array", "items": {"type": "array", "items": {"type": "string"}}},
            Field("x", FieldType.JSON, Mode.REPEATED),
            id="array-of-arrays",
        ),
        pytest.param(
            {"type": "object", "additionalProperties": False},
            Field("x", FieldType.JSON),
            id="dropped-becomes-json",
        ),
        pytest.param(
            {"type": "integer", "minimum": 0, "maximum": 10**30},
            Field("x", FieldType.NUMERIC, precision=38, scale=0),
            id="huge-integer",
        ),
        pytest.param(
            {"type": "number", "multipleOf": 0.5},
            Field("x", FieldType.FLOAT),
            id="unbounded-decimal",
        ),
        pytest.param(
            {"type": "number", "minimum": -1, "maximum": 1, "multipleOf": 0.000000001},
            Field("x", FieldType.NUMERIC, precision=18, scale=9),
            id="scale-9-numeric",
        ),
        pytest.param(
            {"type": "number", "minimum": -1, "maximum": 1, "multipleOf": 0.0000000001},
            Field("x", FieldType.BIGNUMERIC, precision=18, scale=10),
            id="scale-10-bignumeric",
        ),
        pytest.param(
            {"enum": [0.5, 0.0000000001]},
            Field("x", FieldType.BIGNUMERIC, precision=18, scale=10),
            id="enum-scale-10-bignumeric",
        ),
        pytest.param(
            {"type": "number", "minimum": 0, "maximum": 900, "multipleOf": 0.05},
            Field("x", FieldType.NUMERIC, precision=9, scale=2),
            id="price-digits9-scale2",
        ),
        pytest.param(
            {"type": "number", "minimum": -(10**12), "maximum": 0, "multipleOf": 0.001},
            Field("x", FieldType.NUMERIC, precision=18, scale=3),
            id="wide-digits18-scale3",
        ),
        pytest.param(
            {"enum": [1.5, None, 20]},
            Field("x", FieldType.NUMERIC, precision=9, scale=1),
            id="decimal-enum-digits9-scale1",
        ),
    ],
)
def test_field_from_schema_v2(schema: Any, expected: Field) -> None:
    """The v2 rules give JSON for the unrepresentable and NUMERIC for bounded decimals."""
    assert expected == field_from_schema("x", schema, False, ColumnMode.MAJOR)


def test_normalized_v1_renames_without_reordering() -> None:
    """v1 normalisation keeps the REQUIRED-first order of Field.build."""
    built = normalized(field_from_schema("x", OBJECT, False))
    assert [sub.name for sub in built.fields] == ["user_id", "count"]


def test_normalized_v2_sorts_by_normalised_name() -> None:
    """v2 normalisation sorts sub-fields by their BigQuery name."""
    built = normalized(field_from_schema("x", OBJECT, False, ColumnMode.MAJOR), ColumnMode.MAJOR)
    assert [sub.name for sub in built.fields] == ["count", "user_id"]


@pytest.mark.parametrize(
    ("shred", "mode"),
    [
        pytest.param(ShredProperty.UNSTRUCT_EVENT, Mode.NULLABLE, id="unstruct"),
        pytest.param(ShredProperty.CONTEXTS, Mode.REPEATED, id="contexts"),
        pytest.param(ShredProperty.DERIVED_CONTEXTS, Mode.REPEATED, id="derived"),
    ],
)
def test_column_field_v1_mode_follows_shred_property(shred: ShredProperty, mode: Mode) -> None:
    """Unstruct columns are NULLABLE records, context columns REPEATED records."""
    assert mode == column_field(KEY, OBJECT, shred, ColumnMode.FULL).mode


def test_column_field_v1_without_properties_is_string() -> None:
    """A schema with no properties gives a STRING column (JSON text)."""
    expected = Field("contexts_com_acme_thing_1_0_0", FieldType.STRING, Mode.REPEATED)
    assert expected == column_field(KEY, {"type": "object"}, ShredProperty.CONTEXTS)


def test_column_field_is_never_required() -> None:
    """A top-level schema that would be REQUIRED still gives a NULLABLE column."""
    column = column_field(KEY, {"type": "string"}, ShredProperty.UNSTRUCT_EVENT, ColumnMode.FULL)
    assert column.mode == Mode.NULLABLE


def test_column_field_v1_drops_names_that_normalise_alike() -> None:
    """Of two properties that normalise to one name, the first in v1 order is kept."""
    schema = {
        "type": "object",
        "properties": {"bX": {"type": "integer"}, "b_x": {"type": "string"}},
    }
    column = column_field(KEY, schema, ShredProperty.UNSTRUCT_EVENT)
    assert (Field("b_x", FieldType.INTEGER),) == column.fields


def test_column_field_v2_contexts_start_with_schema_version() -> None:
    """v2 context records carry a REQUIRED _schema_version first."""
    column = column_field(KEY, OBJECT, ShredProperty.CONTEXTS, ColumnMode.MAJOR)
    assert (column.name, column.fields[0]) == ("contexts_com_acme_thing_1", SCHEMA_VERSION_FIELD)


def test_column_field_v2_unstruct_has_no_schema_version() -> None:
    """v2 unstruct records have only the schema's own fields."""
    column = column_field(KEY, OBJECT, ShredProperty.UNSTRUCT_EVENT, ColumnMode.MAJOR)
    assert [sub.name for sub in column.fields] == ["count", "user_id"]


def test_column_field_v2_dropped_schema_gives_json_column() -> None:
    """A schema v2 would drop still gives a (JSON) column, so the entity has a home."""
    schema = {"type": "object", "properties": {}, "additionalProperties": False}
    expected = Field("contexts_com_acme_thing_1", FieldType.JSON, Mode.REPEATED)
    assert expected == column_field(KEY, schema, ShredProperty.CONTEXTS, ColumnMode.MAJOR)
