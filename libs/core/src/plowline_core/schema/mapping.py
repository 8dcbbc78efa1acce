"""JSON Schema → BigQuery field: schema-ddl's ``bigquery.Field.build`` (v1) and a v2 switch.

Two steps, as upstream:

1. ``field_from_schema`` builds the field with the *raw* JSON property names
   (``nestedKey3``), exactly as schema-ddl's ``Field.build`` does (vectors
   ``schema_to_field_001..028``, ``expected_field``).
2. ``normalized`` renames every sub-field to its BigQuery name (``nested_key3``), schema-ddl's
   ``Field.normalized`` (``expected_field_normalized``).

Which one to use: the **mutator** adds ``column_field(...)`` (``plowline_core.schema.columns``),
which is step 1 + step 2 under the column name; the **row builder** reads values by raw key
from the event and writes them under ``normalize_field_name(raw key)``, walking the step-1
field (it carries the raw names it must look up). Only normalised names are valid BigQuery
names (``[A-Za-z_][A-Za-z0-9_]*``).

v1 rules (from schema-ddl ``Field.scala``/``Suggestion.scala``, checked against the vectors):
    object (or ``[object, null]``) with properties → RECORD, sub-fields sorted REQUIRED,
    REPEATED, NULLABLE, then by raw name in Java ``String`` order; the record's own mode is
    ``required ? REQUIRED : NULLABLE`` even when ``null`` is allowed (vector 020). Without
    properties → the final suggestion: STRING. Array (or ``[array, null]``) with a single
    ``items`` → the item's field, REPEATED; tuple or missing ``items`` → STRING.
    Otherwise the first suggestion that applies: date/date-time, boolean, string, integer,
    number, enum; else STRING (NULLABLE when the type admits ``null``).

Notes:
    Pure; never raises on any JSON value as schema (malformed keywords read as absent,
    ``$ref`` is not followed and reads as "no type" → STRING). Recursion deeper than
    ``MAX_DEPTH`` is cut to the catch-all type: BigQuery itself allows 15 levels of RECORD.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from plowline_core.schema import jsontype as jt
from plowline_core.schema.entity import ColumnMode
from plowline_core.schema.field import Field, FieldType, Mode
from plowline_core.schema.mapping_v2 import field_from_schema_v2, normalized_v2
from plowline_core.schema.names import java_order, normalize_field_name

#: Nesting depth past which a sub-schema maps to the catch-all type instead of recursing.
MAX_DEPTH = 64

_MODE_RANK = {Mode.REQUIRED: 0, Mode.REPEATED: 1, Mode.NULLABLE: 2}


def field_from_schema(
    name: str, schema: Any, required: bool, mode: ColumnMode = ColumnMode.FULL
) -> Field:
    """Return the BigQuery field of a JSON Schema, with raw (un-normalised) sub-field names.

    Notes:
        ``full``: schema-ddl ``bigquery.Field.build(name, schema, required)`` (v1).
        ``major``: schema-ddl ``parquet.Field.build`` as BigQuery Loader 2.x maps it
        (see ``mapping_v2``); where v2 would drop the field entirely (an empty object with
        ``additionalProperties: false``) this returns a NULLABLE JSON field instead, so the
        function always has a field to give (``field_from_schema_v2`` returns None there).
    """
    if mode is ColumnMode.MAJOR:
        built = field_from_schema_v2(name, schema, required)
        return built if built is not None else Field(name, FieldType.JSON, Mode.NULLABLE)
    return _build(name, jt.as_schema(schema), required, 0)


def normalized(field: Field, mode: ColumnMode = ColumnMode.FULL) -> Field:
    """Return the field with every name normalised to a BigQuery name.

    Notes:
        ``full``: schema-ddl ``Field.normalized``: renames only, keeps the order and keeps
        duplicates (vector 025: ``bX`` and ``b_x`` both become ``b_x``); ``column_field``
        then drops such duplicates. ``major``: v2 ``Field.normalize``: renames, collapses
        colliding names and sorts by the normalised name (vector 054).
        The field's own name is normalised too (vector 007: ``arrayTest`` → ``array_test``).
    """
    if mode is ColumnMode.MAJOR:
        return normalized_v2(field)
    return Field(
        normalize_field_name(field.name),
        field.type,
        field.mode,
        tuple(normalized(sub) for sub in field.fields),
    )


def _build(name: str, schema: Mapping[str, Any], required: bool, depth: int) -> Field:
    kind = jt.json_type(schema)
    if depth >= MAX_DEPTH:
        return _final(name, kind, required)
    if jt.possibly_with_null(kind, "object"):
        return _build_object(name, schema, kind, required, depth)
    if jt.possibly_with_null(kind, "array"):
        items = jt.single_items(schema)
        if items is None:
            return _final(name, kind, required)
        return _build(name, items, False, depth + 1).with_mode(Mode.REPEATED)
    return _suggest(name, schema, kind, required)


def _build_object(
    name: str, schema: Mapping[str, Any], kind: jt.JsonType | None, required: bool, depth: int
) -> Field:
    props = jt.properties(schema)
    if not props:
        return _final(name, kind, required)
    required_keys = jt.required_keys(schema)
    subs = [
        _build(str(key), jt.as_schema(sub), key in required_keys, depth + 1)
        for key, sub in props.items()
    ]
    subs.sort(key=lambda sub: (_MODE_RANK[sub.mode], java_order(sub.name)))
    return Field(name, FieldType.RECORD, _mode(required), tuple(subs))


def _suggest(
    name: str, schema: Mapping[str, Any], kind: jt.JsonType | None, required: bool
) -> Field:
    """Apply schema-ddl's suggestions in order: timestamp, boolean, string, integer, float, enum."""
    fmt = jt.string_format(schema)
    if fmt in ("date", "date-time"):
        field_type = FieldType.DATE if fmt == "date" else FieldType.TIMESTAMP
        if kind == "string":
            return Field(name, field_type, _mode(required))
        if _with_null(kind, "string"):
            return Field(name, field_type, Mode.NULLABLE)
    if kind == "boolean":
        return Field(name, FieldType.BOOLEAN, _mode(required))
    if _with_null(kind, "boolean"):
        return Field(name, FieldType.BOOLEAN, Mode.NULLABLE)
    if kind == "string":
        return Field(name, FieldType.STRING, _mode(required))
    if jt.nullable_of(kind, "string"):
        return Field(name, FieldType.STRING, Mode.NULLABLE)
    if kind == "integer":
        return Field(name, FieldType.INTEGER, _mode(required))
    if _with_null(kind, "integer"):
        return Field(name, FieldType.INTEGER, Mode.NULLABLE)
    numeric = _float_mode(kind, required)
    if numeric is not None:
        return Field(name, FieldType.FLOAT, numeric)
    values = jt.enum_values(schema)
    if values is not None:
        return _from_enum(name, values, required)
    return _final(name, kind, required)


def _float_mode(kind: jt.JsonType | None, required: bool) -> Mode | None:
    if kind == "number":
        return _mode(required)
    if kind == frozenset({"number", "integer", "null"}):
        return Mode.NULLABLE
    if kind == frozenset({"number", "integer"}):
        return _mode(required)
    if _with_null(kind, "number"):
        return Mode.NULLABLE
    return None


def _from_enum(name: str, values: list[Any], required: bool) -> Field:
    mode = _mode(required and None not in values)
    if all(value is None or isinstance(value, str) for value in values):
        return Field(name, FieldType.STRING, mode)
    if all(value is None or _is_integral(value) for value in values):
        return Field(name, FieldType.INTEGER, mode)
    if all(value is None or jt.is_json_number(value) for value in values):
        return Field(name, FieldType.FLOAT, mode)
    return Field(name, FieldType.STRING, mode)


def _final(name: str, kind: jt.JsonType | None, required: bool) -> Field:
    if jt.is_nullable(kind):
        return Field(name, FieldType.STRING, Mode.NULLABLE)
    return Field(name, FieldType.STRING, _mode(required))


def _with_null(kind: jt.JsonType | None, member: str) -> bool:
    # schema-ddl's private ``withNull``: the union is {member, null} or just {member}.
    return isinstance(kind, frozenset) and kind in (
        frozenset({member, "null"}),
        frozenset({member}),
    )


def _is_integral(value: Any) -> bool:
    if isinstance(value, float):
        return value.is_integer()
    return jt.is_json_number(value)


def _mode(required: bool) -> Mode:
    return Mode.REQUIRED if required else Mode.NULLABLE
