"""Read the JSON Schema keywords the BigQuery mapping looks at, from raw JSON.

The mapping accepts *any* JSON value as a schema and never raises, so every keyword is
read defensively here: a malformed keyword reads as absent, which the mapping then turns
into the catch-all type (STRING in v1, JSON in v2).

Notes:
    ``json_type`` keeps schema-ddl's distinction between ``"type": "string"`` (a ``str``)
    and ``"type": [...]`` (a ``frozenset``, even with one member), because schema-ddl's
    suggestions treat them differently (``["string"]`` is not "precisely string").
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

#: The JSON Schema primitive type names schema-ddl knows.
KNOWN_TYPES = frozenset({"string", "number", "integer", "boolean", "object", "array", "null"})

JsonType = str | frozenset[str]


def as_schema(value: Any) -> Mapping[str, Any]:
    """Return ``value`` as a schema object; anything but an object reads as ``{}``."""
    return value if isinstance(value, Mapping) else {}


def json_type(schema: Mapping[str, Any]) -> JsonType | None:
    """Return the ``type`` keyword, or None when absent or not made of known type names."""
    raw = schema.get("type")
    if isinstance(raw, str):
        return raw if raw in KNOWN_TYPES else None
    if isinstance(raw, list) and raw and all(isinstance(t, str) and t in KNOWN_TYPES for t in raw):
        return frozenset(raw)
    return None


def is_nullable(kind: JsonType | None) -> bool:
    """Return True when the type admits ``null`` (``"null"`` or a union containing it)."""
    if isinstance(kind, frozenset):
        return "null" in kind
    return kind == "null"


def nullable_of(kind: JsonType | None, member: str) -> bool:
    """Return True when the type is precisely the union ``[member, "null"]``."""
    return isinstance(kind, frozenset) and kind == frozenset({member, "null"})


def possibly_with_null(kind: JsonType | None, member: str) -> bool:
    """Return True when the type is ``member`` or ``[member, "null"]``."""
    return kind == member or nullable_of(kind, member)


def properties(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """Return the ``properties`` keyword as a mapping (``{}`` when absent or malformed)."""
    raw = schema.get("properties")
    return raw if isinstance(raw, Mapping) else {}


def required_keys(schema: Mapping[str, Any]) -> frozenset[str]:
    """Return the names listed in ``required`` (strings only)."""
    raw = schema.get("required")
    if not isinstance(raw, list):
        return frozenset()
    return frozenset(item for item in raw if isinstance(item, str))


def single_items(schema: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """Return the single ``items`` schema, or None for a tuple or missing ``items``."""
    raw = schema.get("items")
    if isinstance(raw, Mapping):
        return raw
    if isinstance(raw, bool):
        # Draft-6 boolean schema: ``true`` accepts anything, read it as ``{}``.
        return {} if raw else None
    return None


def enum_values(schema: Mapping[str, Any]) -> list[Any] | None:
    """Return the ``enum`` keyword as a list, or None when absent or malformed."""
    raw = schema.get("enum")
    return raw if isinstance(raw, list) else None


def string_format(schema: Mapping[str, Any]) -> str | None:
    """Return the ``format`` keyword when it is a string."""
    raw = schema.get("format")
    return raw if isinstance(raw, str) else None


def is_json_number(value: Any) -> bool:
    """Return True for a JSON number (Python's ``bool`` is not one)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def as_decimal(value: Any) -> Decimal | None:
    """Return a finite JSON number as a Decimal, written as in the JSON text."""
    if not is_json_number(value):
        return None
    try:
        number = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    except (InvalidOperation, ValueError):
        return None
    return number if number.is_finite() else None


def number_keyword(schema: Mapping[str, Any], keyword: str) -> Decimal | None:
    """Return a numeric keyword (``minimum``, ``maximum``, ``multipleOf``) as a Decimal."""
    return as_decimal(schema.get(keyword))
