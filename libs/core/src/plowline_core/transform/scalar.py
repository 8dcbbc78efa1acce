"""Casters of non-RECORD values (STRING, JSON, BOOLEAN, INTEGER, FLOAT, NUMERIC, TIMESTAMP, DATE).

``SCALAR_CASTERS[mode][field_type]`` is the caster of one non-null value; see
:mod:`plowline_core.transform.cast` for the rules of each column mode.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Any

from plowline_core.badrows.encoding import dumps
from plowline_core.schema.entity import ColumnMode
from plowline_core.schema.field import Field, FieldType, Mode
from plowline_core.transform.problems import Caster, CastError, WrongType

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
NUMERIC_TYPES = frozenset(
    {FieldType.INTEGER, FieldType.FLOAT, FieldType.NUMERIC, FieldType.BIGNUMERIC}
)
"""Column types whose JSON value is a number."""


#: 2.x's names of the expected type in ``WrongType`` (schema-ddl parquet ``Type`` names; 2.x
#: writes ``Decimal(Digits18,2)`` with the precision, which a BigQuery type does not carry,
#: and ``Integer`` for integers bounded within int32, ``Long`` otherwise: ``Long`` here).
V2_TYPE_NAMES: dict[FieldType, str] = {
    FieldType.STRING: "String",
    FieldType.JSON: "Json",
    FieldType.BOOLEAN: "Boolean",
    FieldType.INTEGER: "Long",
    FieldType.FLOAT: "Double",
    FieldType.NUMERIC: "Decimal",
    FieldType.BIGNUMERIC: "Decimal",
    FieldType.TIMESTAMP: "Timestamp",
    FieldType.DATE: "Date",
    FieldType.RECORD: "Struct",
}


def expected_name(kind: FieldType, mode: ColumnMode) -> str:
    """Return the ``expected`` text of a WrongType for a column type: 1.x ``STRING``, 2.x ``String``."""
    if mode is ColumnMode.MAJOR:
        return V2_TYPE_NAMES.get(kind, kind.value)
    return kind.value


def expected_of(field: Field, mode: ColumnMode) -> str:
    """Return the ``expected`` text of a WrongType for ``field``: 2.x's ``Decimal(Digits9,2)``
    for a decimal in ``major`` mode, else ``expected_name`` of its type."""
    if mode is ColumnMode.MAJOR and field.precision is not None and field.scale is not None:
        return f"Decimal(Digits{field.precision},{field.scale})"
    return expected_name(field.type, mode)


def is_decimal(field: Field, mode: ColumnMode) -> bool:
    """Say whether ``field``'s values are checked against its precision and scale (2.x)."""
    return mode is ColumnMode.MAJOR and field.scale is not None and field.type in NUMERIC_TYPES


def stored_as_number(field: Field, mode: ColumnMode) -> bool:
    """Say whether a number within int64 (or a finite float) is stored without a check."""
    return (
        field.mode is not Mode.REPEATED
        and field.type in NUMERIC_TYPES
        and not is_decimal(field, mode)
    )


@lru_cache(maxsize=256)
def decimal_caster(precision: int, scale: int) -> Caster:
    """Return the caster of a schema-ddl ``Decimal(precision, scale)`` (2.x's rule).

    Notes:
        A JSON number fits when it has at most ``scale`` decimal places once trailing
        zeros are dropped (``87.90000`` fits 2) and at most ``precision - scale`` digits
        before the point; anything else is a ``WrongType`` naming the decimal. The value
        is written as the JSON number it was (BigQuery scales it).
    """
    name = f"Decimal(Digits{precision},{scale})"
    quantum = Decimal(1).scaleb(-scale)
    limit = Decimal(10) ** (precision - scale)

    def decimal(value: Any, errors: list[CastError]) -> Any:
        kind = type(value)
        if kind is int or kind is float:
            try:
                number = Decimal(repr(value)) if kind is float else Decimal(value)
                fits = number.is_finite() and abs(number) < limit
                fits = fits and number == number.quantize(quantum)
            except InvalidOperation:  # quantize past the context's precision: too long
                fits = False
            if fits:
                return value
        errors.append(WrongType(value, name))
        return None

    return decimal


def compact_json(value: Any) -> str:
    """Return compact JSON text, as circe's ``noSpaces`` prints it.

    Notes:
        Total: at any depth, integers beyond 64 bits exact (orjson refuses both), see
        ``plowline_core.badrows.encoding``.
    """
    return dumps(value, max_depth=None).decode()


def _wrong(expected: FieldType, mode: ColumnMode = ColumnMode.FULL) -> Caster:
    name = expected_name(expected, mode)

    def wrong(value: Any, errors: list[CastError]) -> Any:
        errors.append(WrongType(value, name))

    return wrong


def _v1_string(value: Any, errors: list[CastError]) -> Any:
    return value if type(value) is str else compact_json(value)


def _json_text(value: Any, errors: list[CastError]) -> Any:
    return compact_json(value)


def _boolean(mode: ColumnMode) -> Caster:
    name = expected_name(FieldType.BOOLEAN, mode)

    def boolean(value: Any, errors: list[CastError]) -> Any:
        if type(value) is bool:
            return value
        errors.append(WrongType(value, name))
        return None

    return boolean


def _integer(mode: ColumnMode) -> Caster:
    name = expected_name(FieldType.INTEGER, mode)

    def integer(value: Any, errors: list[CastError]) -> Any:
        kind = type(value)
        if kind is int and INT64_MIN <= value <= INT64_MAX:
            return value
        if kind is float and value.is_integer() and INT64_MIN <= value <= INT64_MAX:
            return int(value)  # circe's toLong accepts 2.0
        errors.append(WrongType(value, name))
        return None

    return integer


def _number(expected: FieldType, mode: ColumnMode = ColumnMode.FULL) -> Caster:
    name = expected_name(expected, mode)

    def number(value: Any, errors: list[CastError]) -> Any:
        kind = type(value)
        if kind is int:
            # JSON encoders stop at 64 bits; beyond that the float is what BigQuery keeps anyway
            return value if INT64_MIN <= value <= INT64_MAX else float(value)
        if kind is float and value - value == 0:  # finite floats only
            return value
        errors.append(WrongType(value, name))
        return None

    return number


def _any_string(expected: FieldType, mode: ColumnMode = ColumnMode.FULL) -> Caster:
    name = expected_name(expected, mode)

    def any_string(value: Any, errors: list[CastError]) -> Any:
        if type(value) is str:
            return value
        errors.append(WrongType(value, name))
        return None

    return any_string


def _iso_timestamp(value: Any, errors: list[CastError]) -> Any:
    if type(value) is str:
        text = value[:-1] + "Z" if value.endswith("z") else value
        try:
            parsed = datetime.fromisoformat(text)
        except ValueError:
            parsed = None
        if parsed is not None and parsed.tzinfo is not None:
            return parsed.astimezone(UTC).isoformat().replace("+00:00", "Z")
    errors.append(WrongType(value, "Timestamp"))
    return None


def _iso_date(value: Any, errors: list[CastError]) -> Any:
    if type(value) is str and len(value) == 10:
        try:
            return date.fromisoformat(value).isoformat()
        except ValueError:
            pass
    errors.append(WrongType(value, "Date"))
    return None


SCALAR_CASTERS: dict[ColumnMode, dict[FieldType, Caster]] = {
    ColumnMode.FULL: {
        FieldType.STRING: _v1_string,
        FieldType.JSON: _v1_string,
        FieldType.BOOLEAN: _boolean(ColumnMode.FULL),
        FieldType.INTEGER: _integer(ColumnMode.FULL),
        FieldType.FLOAT: _number(FieldType.FLOAT),
        FieldType.NUMERIC: _number(FieldType.NUMERIC),
        FieldType.BIGNUMERIC: _number(FieldType.BIGNUMERIC),
        FieldType.TIMESTAMP: _any_string(FieldType.TIMESTAMP),
        FieldType.DATE: _any_string(FieldType.DATE),
        FieldType.RECORD: _wrong(FieldType.RECORD),
    },
    ColumnMode.MAJOR: {
        FieldType.STRING: _any_string(FieldType.STRING, ColumnMode.MAJOR),
        FieldType.JSON: _json_text,
        FieldType.BOOLEAN: _boolean(ColumnMode.MAJOR),
        FieldType.INTEGER: _integer(ColumnMode.MAJOR),
        FieldType.FLOAT: _number(FieldType.FLOAT, ColumnMode.MAJOR),
        FieldType.NUMERIC: _number(FieldType.NUMERIC, ColumnMode.MAJOR),
        FieldType.BIGNUMERIC: _number(FieldType.BIGNUMERIC, ColumnMode.MAJOR),
        FieldType.TIMESTAMP: _iso_timestamp,
        FieldType.DATE: _iso_date,
        FieldType.RECORD: _wrong(FieldType.RECORD, ColumnMode.MAJOR),
    },
}
