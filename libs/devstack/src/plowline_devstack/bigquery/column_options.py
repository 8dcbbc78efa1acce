"""Correction: a column's options survive tables.insert, tables.patch and tables.get.

Real BigQuery: a schema field's ``maxLength`` (STRING, BYTES), ``precision`` and ``scale``
(NUMERIC, BIGNUMERIC), ``defaultValueExpression``, ``collation`` and ``roundingMode`` are
kept with the column and returned by ``tables.get`` (the integers as JSON strings, as
BigQuery writes int64). A client that reads the schema and patches it back therefore
changes none of them; that is what plowline's mutator promises for columns added by hand.

bqemulator 1.4.0 parses only name, type, mode, description, sub-fields and a RANGE's
element type, so every other option is silently dropped on create and on patch, and a
test cannot see whether a patch kept them. Its catalog model has a slot for each option
above; this correction fills them when parsing REST fields and writes them back when
rendering. ``policyTags`` has no slot in the catalog and is still dropped. A RANGE
column's ``rangeElementType`` is written as BigQuery writes it, ``{"type": "DATE"}``
(shipped, it carries an internal name and a mode).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import bqemulator.api.routes.tables

from plowline_devstack.bigquery.interception import Correction

_INTEGERS = {"maxLength": "max_length", "precision": "precision", "scale": "scale"}
_TEXTS = {
    "defaultValueExpression": "default_value_expression",
    "collation": "collation",
    "roundingMode": "rounding_mode",
}


def _with_options(field: Any, raw: Mapping[str, Any]) -> Any:
    update: dict[str, Any] = {}
    for key, attribute in _INTEGERS.items():
        if raw.get(key) is not None:
            update[attribute] = int(raw[key])
    for key, attribute in _TEXTS.items():
        if raw.get(key) is not None:
            update[attribute] = str(raw[key])
    return field.model_copy(update=update) if update else field


def _render_options(field: Any, out: dict[str, Any]) -> dict[str, Any]:
    for key, attribute in _INTEGERS.items():
        value = getattr(field, attribute, None)
        if value is not None:
            out[key] = str(value)
    for key, attribute in _TEXTS.items():
        value = getattr(field, attribute, None)
        if value is not None:
            out[key] = value
    return out


def keep_column_options() -> None:
    """Make the emulator's REST schema parser and renderer carry the column options."""
    tables: Any = bqemulator.api.routes.tables
    shipped_parse: Callable[[list[dict[str, Any]]], tuple[Any, ...]] = tables._parse_schema_fields
    shipped_render: Callable[[Any], dict[str, Any]] = tables._field_to_rest

    def parse(raw_fields: list[dict[str, Any]]) -> tuple[Any, ...]:
        parsed = shipped_parse(raw_fields)  # recurses into sub-fields through ``parse``
        return tuple(_with_options(f, raw) for f, raw in zip(parsed, raw_fields, strict=True))

    def render(field: Any) -> dict[str, Any]:
        out = _render_options(field, shipped_render(field))
        if field.range_element_type is not None:
            out["rangeElementType"] = {"type": field.range_element_type.type}
        return out

    tables._parse_schema_fields = parse
    tables._field_to_rest = render


COLUMN_OPTIONS = Correction(
    name="column-options",
    summary="maxLength, precision, scale, defaultValueExpression, collation, roundingMode kept",
    patch=keep_column_options,
)
