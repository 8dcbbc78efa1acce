"""JSON Schema → BigQuery field under the v2 rules (``columnMode: major``, BigQuery Loader 2.x).

v2 builds schema-ddl's ``parquet.Field`` and BigQuery Loader 2 maps it to BigQuery:
Struct → RECORD, Integer/Long → INTEGER, Double → FLOAT, Decimal → NUMERIC, Json → JSON,
Array → REPEATED. Differences from v1 (vectors ``schema_to_field_029..060``; 055-060 are
upstream's, not carried: ``tests/data/conformance/README.md``):

- unions of several non-null types, objects without properties, arrays without ``items``
  and anything unknown → JSON (v1: STRING);
- bounded numbers: integers with ``minimum``/``maximum`` beyond int64 and numbers with a
  fractional ``multipleOf`` and both bounds → NUMERIC; enums of decimals → NUMERIC; a
  decimal with more than 9 places → BIGNUMERIC (2.x ``bqFieldOf``); each such field
  carries schema-ddl's ``Decimal(precision, scale)`` (``Field.precision``/``scale``: the
  caster's check, precision 9, 18 or 38 digits);
- sub-fields sorted by raw name only (no REQUIRED-first); a sub-field is REQUIRED iff it is
  in ``required`` and its type has no ``null`` (records too, unlike v1's vector 020);
- an object with no properties and ``additionalProperties: false`` is dropped, and a record
  whose sub-fields were all dropped is dropped too (``None``).

Differences from upstream, recorded here:
    The fetched schema-ddl code gives enums of integers ``Decimal(p, 0)``; vector 049
    (a newer release) expects Integer, which we follow: an all-integral enum is INTEGER
    (NUMERIC past 18 digits). An array of arrays has no BigQuery type: the inner array
    becomes JSON (REPEATED JSON column). An array whose items are dropped is dropped.

Notes:
    Pure; never raises on any JSON value (see ``jsontype``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from plowline_core.schema import jsontype as jt
from plowline_core.schema.field import Field, FieldType, Mode
from plowline_core.schema.names import java_order, normalize_field_name

#: Nesting depth past which a sub-schema maps to JSON instead of recursing.
MAX_DEPTH = 64

_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)
_MAX_DECIMAL_DIGITS = 38
_MAX_NUMERIC_SCALE = 9  # BigQuery NUMERIC holds 9 decimal places; BIGNUMERIC 38
_PRECISIONS = (9, 18, 38)  # schema-ddl's DecimalPrecision: Digits9, Digits18, Digits38
_Decimal = tuple[int, int]  # (precision, scale)
_Typed = tuple[FieldType, _Decimal | None]


@dataclass(frozen=True, slots=True)
class _Built:
    """A v2 type before it gets a name: the parquet ``NullableType`` in BigQuery terms."""

    type: FieldType
    nullable: bool
    repeated: bool = False
    fields: tuple[Field, ...] = ()
    decimal: _Decimal | None = None  # (precision, scale) of a NUMERIC/BIGNUMERIC


def field_from_schema_v2(name: str, schema: Any, required: bool) -> Field | None:
    """Return the v2 field (raw sub-field names), or None when v2 drops it entirely.

    Notes:
        schema-ddl ``parquet.Field.build(name, schema, enforceValuePresence=required)``.
    """
    built = _build_type(jt.as_schema(schema), 0)
    return None if built is None else _named(name, built, required)


def element_of_v2(schema: Any) -> Field | None:
    """Return the v2 element of a repeated column (``buildRepeated``, item presence enforced).

    The element is named ``""``; None when v2 drops it. An array schema's element becomes
    JSON, since BigQuery has no arrays of arrays.
    """
    built = _build_type(jt.as_schema(schema), 0)
    if built is None:
        return None
    if built.repeated:
        built = _Built(FieldType.JSON, built.nullable)
    return _named("", built, True)


def normalized_v2(field: Field) -> Field:
    """Return the field with normalised names, colliding names collapsed, sorted by name.

    Notes:
        schema-ddl ``parquet.Field.normalize`` as vector 054 shows it: of the fields whose
        normalised names collide, the one with the lowest raw name (Java order) gives the
        type; the merged field is NULLABLE if any of them is (REPEATED wins if the winner
        is REPEATED). Plus the ``_`` prefix for an illegal first character (vector 055).
    """
    return Field(
        normalize_field_name(field.name), field.type, field.mode, _normalize_subs(field.fields)
    )


def _normalize_subs(fields: tuple[Field, ...]) -> tuple[Field, ...]:
    groups: dict[str, list[Field]] = {}
    for sub in fields:
        groups.setdefault(normalize_field_name(sub.name), []).append(sub)
    merged = [_collapse(name, group) for name, group in groups.items()]
    merged.sort(key=lambda sub: java_order(sub.name))
    return tuple(merged)


def _collapse(name: str, group: list[Field]) -> Field:
    winner = min(group, key=lambda sub: java_order(sub.name))
    mode = winner.mode
    if mode is Mode.REQUIRED and any(sub.mode is not Mode.REQUIRED for sub in group):
        mode = Mode.NULLABLE
    return Field(name, winner.type, mode, _normalize_subs(winner.fields))


def _named(name: str, built: _Built, required: bool) -> Field:
    if built.repeated:
        mode = Mode.REPEATED
    elif required and not built.nullable:
        mode = Mode.REQUIRED
    else:
        mode = Mode.NULLABLE
    precision, scale = built.decimal or (None, None)
    return Field(name, built.type, mode, built.fields, precision=precision, scale=scale)


def _build_type(schema: Mapping[str, Any], depth: int) -> _Built | None:
    kind = jt.json_type(schema)
    nullable = jt.is_nullable(kind)
    if depth >= MAX_DEPTH:
        return _Built(FieldType.JSON, True)
    if jt.possibly_with_null(kind, "object"):
        return _build_object(schema, nullable, depth)
    if jt.possibly_with_null(kind, "array"):
        return _build_array(schema, nullable, depth)
    suggested = _suggest(schema, kind)
    if suggested is not None:
        return suggested
    return _Built(FieldType.JSON, nullable if kind is not None else True)


def _build_object(schema: Mapping[str, Any], nullable: bool, depth: int) -> _Built | None:
    props = jt.properties(schema)
    if not props:
        if schema.get("additionalProperties") is False and not schema.get("patternProperties"):
            return None
        return _Built(FieldType.JSON, nullable)
    required_keys = jt.required_keys(schema)
    subs: list[Field] = []
    for key, sub_schema in props.items():
        built = _build_type(jt.as_schema(sub_schema), depth + 1)
        if built is not None:
            subs.append(_named(str(key), built, key in required_keys))
    if not subs:
        return None
    subs.sort(key=lambda sub: java_order(sub.name))
    return _Built(FieldType.RECORD, nullable, fields=tuple(subs))


def _build_array(schema: Mapping[str, Any], nullable: bool, depth: int) -> _Built | None:
    items = jt.single_items(schema)
    if items is None:
        return _Built(FieldType.JSON, nullable, repeated=True)
    element = _build_type(items, depth + 1)
    if element is None:
        return None
    if element.repeated:
        return _Built(FieldType.JSON, nullable, repeated=True)
    return _Built(element.type, nullable, True, element.fields, element.decimal)


def _suggest(schema: Mapping[str, Any], kind: jt.JsonType | None) -> _Built | None:
    """Apply the parquet suggestions in order: timestamp, boolean, string, numeric, enum."""
    nullable = jt.is_nullable(kind)
    if jt.possibly_with_null(kind, "string"):
        fmt = jt.string_format(schema)
        if fmt == "date":
            return _Built(FieldType.DATE, nullable)
        if fmt == "date-time":
            return _Built(FieldType.TIMESTAMP, nullable)
        return _Built(FieldType.STRING, nullable)
    if jt.possibly_with_null(kind, "boolean"):
        return _Built(FieldType.BOOLEAN, nullable)
    numeric = _numeric_type(schema, kind)
    if numeric is not None:
        return _Built(numeric[0], nullable, decimal=numeric[1])
    values = jt.enum_values(schema)
    if values is not None:
        return _enum_type(values)
    return None


def _numeric_type(schema: Mapping[str, Any], kind: jt.JsonType | None) -> _Typed | None:
    if jt.possibly_with_null(kind, "integer"):
        return _integer_type(schema)
    if not _only_numeric(kind):
        return None
    multiple = jt.number_keyword(schema, "multipleOf")
    if multiple is None:
        return FieldType.FLOAT, None
    if _integral(multiple):
        return _integer_type(schema)
    maximum = jt.number_keyword(schema, "maximum")
    minimum = jt.number_keyword(schema, "minimum")
    if maximum is None or minimum is None:
        return FieldType.FLOAT, None
    scale = _scale(multiple)
    digits = max(_int_digits(maximum), _int_digits(minimum)) + scale
    return _decimal_type(digits, scale)


def _integer_type(schema: Mapping[str, Any]) -> _Typed:
    maximum = jt.number_keyword(schema, "maximum")
    minimum = jt.number_keyword(schema, "minimum")
    if maximum is None or minimum is None:
        return FieldType.INTEGER, None
    if minimum >= _INT64[0] and maximum <= _INT64[1]:
        return FieldType.INTEGER, None
    return _decimal_type(max(_int_digits(maximum), _int_digits(minimum)), 0)


def _enum_type(values: list[Any]) -> _Built:
    nullable = None in values
    present = [value for value in values if value is not None]
    if all(jt.is_json_number(value) for value in present):
        numbers = [jt.as_decimal(value) for value in present]
        kind, decimal = _numeric_enum_type([n for n in numbers if n is not None])
        return _Built(kind, nullable, decimal=decimal)
    if all(isinstance(value, str) for value in present):
        return _Built(FieldType.STRING, nullable)
    return _Built(FieldType.JSON, nullable)


def _numeric_enum_type(numbers: list[Decimal]) -> _Typed:
    scale = max((_scale(n) for n in numbers), default=0)
    digits = max((_int_digits(n) for n in numbers), default=0) + scale
    if scale == 0 and digits <= 18:
        return FieldType.INTEGER, None
    return _decimal_type(digits, scale)


def _decimal_type(digits: int, scale: int) -> _Typed:
    """Return a schema-ddl Decimal's BigQuery type and ``(precision, scale)``.

    Notes:
        schema-ddl's precisions are 9, 18 and 38 digits (the smallest that holds
        ``digits``); past 38 there is no decimal (FLOAT). Scale > 9 → BIGNUMERIC
        (2.x ``bqFieldOf``).
    """
    if digits > _MAX_DECIMAL_DIGITS:
        return FieldType.FLOAT, None
    precision = next(p for p in _PRECISIONS if digits <= p)
    kind = FieldType.BIGNUMERIC if scale > _MAX_NUMERIC_SCALE else FieldType.NUMERIC
    return kind, (precision, scale)


def _only_numeric(kind: jt.JsonType | None) -> bool:
    if isinstance(kind, frozenset):
        members = kind - {"null"}
        return bool(members) and members <= {"number", "integer"}
    return kind in ("number", "integer")


def _integral(number: Decimal) -> bool:
    return number == number.to_integral_value()


def _scale(number: Decimal) -> int:
    exponent = number.as_tuple().exponent
    return max(0, -exponent) if isinstance(exponent, int) else 0


def _int_digits(number: Decimal) -> int:
    """Return BigDecimal ``precision - scale``: the digits left of the point (at least 1)."""
    shape = number.as_tuple()
    exponent = shape.exponent if isinstance(shape.exponent, int) else 0
    return max(1, len(shape.digits) + exponent)
