"""Properties of the mapping: total over any JSON, valid and stable over Iglu Central."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from plowline_core.iglu.key import SchemaKey
from plowline_core.schema.columns import column_field
from plowline_core.schema.entity import ColumnMode, ShredProperty
from plowline_core.schema.field import Field
from plowline_core.schema.mapping import field_from_schema, normalized
from plowline_core.schema.names import is_valid_name
from plowline_core.schema.widening import plan_widening

_KEYWORDS = st.sampled_from(
    [
        "type",
        "properties",
        "items",
        "required",
        "enum",
        "format",
        "minimum",
        "maximum",
        "multipleOf",
        "additionalProperties",
        "patternProperties",
        "oneOf",
        "$ref",
        "x",
    ]
)
_TYPES = st.sampled_from(
    ["string", "number", "integer", "boolean", "object", "array", "null", "bogus"]
)
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=8)
    | _TYPES
    | st.sampled_from(["date", "date-time"])
)
JSON = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(_KEYWORDS | st.text(max_size=6), inner, max_size=5)
    ),
    max_leaves=30,
)
MODES = st.sampled_from(list(ColumnMode))
KEY = SchemaKey.parse("iglu:com.acme/thing/jsonschema/1-0-0")


def _names(field: Field) -> list[str]:
    return [field.name] + [name for sub in field.fields for name in _names(sub)]


@settings(max_examples=300, deadline=None)
@given(JSON, st.booleans(), MODES)
def test_field_from_schema_never_raises(schema: Any, required: bool, mode: ColumnMode) -> None:
    """Any JSON value is a schema the mapping turns into a field."""
    field = normalized(field_from_schema("x", schema, required, mode), mode)
    assert field.name == "x"


@settings(max_examples=300, deadline=None)
@given(JSON, st.sampled_from(list(ShredProperty)), MODES)
def test_column_field_names_are_valid_for_any_json(
    schema: Any, shred: ShredProperty, mode: ColumnMode
) -> None:
    """Every name in a column built from any JSON is a legal BigQuery name."""
    column = column_field(KEY, schema, shred, mode)
    assert [name for name in _names(column) if not is_valid_name(name)] == []


def _iglu_schemas(root: Path) -> list[tuple[SchemaKey, dict[str, Any]]]:
    schemas = []
    for path in sorted((root / "schemas").glob("*/*/*/*")):
        vendor, name, fmt, version = path.parts[-4:]
        key = SchemaKey.parse(f"iglu:{vendor}/{name}/{fmt}/{version}")
        schemas.append((key, json.loads(path.read_text())))
    return schemas


@pytest.fixture(scope="module")
def iglu_schemas(iglu_central_dir: Path) -> list[tuple[SchemaKey, dict[str, Any]]]:
    """Every schema of the Iglu Central checkout with its key."""
    return _iglu_schemas(iglu_central_dir)


def test_iglu_central_is_all_there(iglu_schemas: list[tuple[SchemaKey, dict[str, Any]]]) -> None:
    """The checkout holds the 679 schemas (660 JSON Schemas, some Avro/Thrift) the tests walk."""
    assert len(iglu_schemas) == 679


@pytest.mark.parametrize("mode", list(ColumnMode), ids=str)
@pytest.mark.parametrize("shred", list(ShredProperty), ids=str)
def test_iglu_central_columns_have_valid_names(
    iglu_schemas: list[tuple[SchemaKey, dict[str, Any]]], shred: ShredProperty, mode: ColumnMode
) -> None:
    """Every Iglu Central schema gives a column whose names are all legal and unique per record."""
    bad = []
    for key, schema in iglu_schemas:
        column = column_field(key, schema, shred, mode)
        if not all(is_valid_name(name) for name in _names(column)) or not _unique(column):
            bad.append(key.to_uri())
    assert bad == []


@pytest.mark.parametrize("mode", list(ColumnMode), ids=str)
def test_iglu_central_plan_against_itself_is_empty(
    iglu_schemas: list[tuple[SchemaKey, dict[str, Any]]], mode: ColumnMode
) -> None:
    """A table that already has every Iglu Central column needs nothing more."""
    columns = tuple(
        column_field(key, schema, ShredProperty.CONTEXTS, mode) for key, schema in iglu_schemas
    )
    columns = tuple({column.name: column for column in columns}.values())
    plan = plan_widening(columns, columns)
    assert (plan.is_empty, plan.conflicts) == (True, ())


def _unique(field: Field) -> bool:
    names = [sub.name.lower() for sub in field.fields]
    return len(names) == len(set(names)) and all(_unique(sub) for sub in field.fields)
