"""Check one insertAll row against a table schema the way real BigQuery does.

Real BigQuery rejects a streamed row (``reason: invalid``) when it names a field the table
does not have (``no such field: X.``), omits or nulls a REQUIRED field (``Missing required
field: X.``), gives a value that cannot be converted to the column type (``Cannot convert
value to integer (bad value): abc``), gives an array to a non-repeated field or a scalar to
a RECORD. Nested RECORD and REPEATED fields are checked with dotted locations. GEOGRAPHY
and INTERVAL take text only, RANGE text or ``{"start", "end"}`` (bqemulator as shipped
fails the whole request with HTTP 500 on, say, an object in a GEOGRAPHY column).

Notes:
    Pure: works on any schema objects with ``name``, ``type``, ``mode`` and ``fields``
    (bqemulator's ``TableFieldSchema``), returns the first problem or ``None``.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, time
from decimal import Decimal, InvalidOperation
from typing import Any, Protocol


class SchemaField(Protocol):
    """The attributes of a BigQuery schema field the checks read."""

    @property
    def name(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def mode(self) -> str: ...
    @property
    def fields(self) -> Sequence[SchemaField]: ...


@dataclass(frozen=True, slots=True)
class RowProblem:
    """Why BigQuery would reject a row: the field's dotted location and the message."""

    location: str
    message: str

    def to_api(self) -> dict[str, str]:
        """Render as one entry of an insertAll ``insertErrors[].errors`` list."""
        return {
            "reason": "invalid",
            "location": self.location,
            "debugInfo": "",
            "message": self.message,
        }


_ALIASES = {
    "INT64": "INTEGER",
    "FLOAT64": "FLOAT",
    "BOOL": "BOOLEAN",
    "STRUCT": "RECORD",
    "BIGNUMERIC": "NUMERIC",
}
_USER_NAMES = {"INTEGER": "integer", "FLOAT": "double", "BOOLEAN": "boolean", "NUMERIC": "numeric"}


def check_row(
    fields: Sequence[SchemaField],
    values: Mapping[str, Any],
    *,
    ignore_unknown: bool = False,
    cache: dict[int, _Index] | None = None,
) -> RowProblem | None:
    """Return why BigQuery would reject ``values`` for a table of ``fields``, or None.

    Notes:
        ``cache`` (one dict per request) keeps each record's name index, so checking many
        rows against one schema visits only the keys each row has, plus the REQUIRED fields.
    """
    return _check_record(fields, values, "", ignore_unknown, {} if cache is None else cache)


@dataclass(frozen=True, slots=True)
class _Index:
    """A record's fields by lower-cased name (BigQuery names are case-insensitive)."""

    fields: Sequence[SchemaField]
    by_lower: dict[str, tuple[int, SchemaField]]
    required: frozenset[int]

    @classmethod
    def of(cls, fields: Sequence[SchemaField]) -> _Index:
        """Index ``fields``; the first of two names that differ only in case wins."""
        by_lower: dict[str, tuple[int, SchemaField]] = {}
        for position, field in enumerate(fields):
            by_lower.setdefault(field.name.lower(), (position, field))
        required = frozenset(
            i for i, f in enumerate(fields) if (f.mode or "NULLABLE").upper() == "REQUIRED"
        )
        return cls(fields, by_lower, required)


def _check_record(
    fields: Sequence[SchemaField],
    values: Mapping[str, Any],
    prefix: str,
    ignore_unknown: bool,
    cache: dict[int, _Index],
) -> RowProblem | None:
    index = cache.get(id(fields))
    if index is None:
        index = cache[id(fields)] = _Index.of(fields)
    found: dict[int, Any] = {}
    for key, value in values.items():
        hit = index.by_lower.get(key.lower()) if isinstance(key, str) else None
        if hit is None:
            if not ignore_unknown:
                return RowProblem(prefix + str(key), f"no such field: {prefix}{key}.")
            continue
        position, field = hit
        if position in found and key != field.name:
            continue  # a key spelt exactly like the field wins over another casing
        found[position] = value
    # The first problem in schema order, as BigQuery reports it.
    for position in sorted(found.keys() | index.required):
        field = index.fields[position]
        problem = _check_field(
            field, found.get(position), prefix + field.name, ignore_unknown, cache
        )
        if problem:
            return problem
    return None


def _check_field(
    field: SchemaField, value: Any, location: str, ignore_unknown: bool, cache: dict[int, _Index]
) -> RowProblem | None:
    mode = (field.mode or "NULLABLE").upper()
    if value is None:
        return (
            RowProblem(location, f"Missing required field: {location}.")
            if mode == "REQUIRED"
            else None
        )
    if mode == "REPEATED":
        if not isinstance(value, list):
            return RowProblem(
                location, f"Cannot convert value to array (bad value): {_show(value)}"
            )
        for item in value:
            if item is None:
                return RowProblem(
                    location, f"Field {location}: NULL values are not allowed in an array."
                )
            problem = _check_value(field, item, location, ignore_unknown, cache)
            if problem:
                return problem
        return None
    if isinstance(value, list):
        return RowProblem(location, f"Array specified for non-repeated field: {location}.")
    return _check_value(field, value, location, ignore_unknown, cache)


def _check_value(
    field: SchemaField, value: Any, location: str, ignore_unknown: bool, cache: dict[int, _Index]
) -> RowProblem | None:
    kind = _ALIASES.get(field.type.upper(), field.type.upper())
    if kind == "RECORD":
        if not isinstance(value, dict):
            return RowProblem(location, f"This field: {location} is not a record.")
        return _check_record(field.fields, value, location + ".", ignore_unknown, cache)
    accepts = _ACCEPTS.get(kind)
    if accepts is None or accepts(value):
        return None
    name = _USER_NAMES.get(kind, kind.lower())
    return RowProblem(location, f"Cannot convert value to {name} (bad value): {_show(value)}")


def _show(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _is_string(value: Any) -> bool:
    # BigQuery renders JSON numbers and booleans given to a STRING column as text.
    return isinstance(value, str | int | float)


def _is_integer(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    if isinstance(value, float):
        return value.is_integer()
    return isinstance(value, str) and _parses(lambda: int(value.strip(), 10))


def _is_float(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, int | float) or (
        isinstance(value, str) and _parses(lambda: float(value))
    )


def _is_numeric(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return False
    return _parses(lambda: Decimal(str(value)))


def _is_boolean(value: Any) -> bool:
    return isinstance(value, bool) or (
        isinstance(value, str) and value.lower() in ("true", "false")
    )


def _is_timestamp(value: Any) -> bool:
    if isinstance(value, int) and not isinstance(value, bool):
        return True
    cleaned = (
        value.replace(" UTC", "+00:00").replace("Z", "+00:00") if isinstance(value, str) else ""
    )
    return bool(cleaned) and _parses(lambda: datetime.fromisoformat(cleaned))


def _is_text(value: Any) -> bool:
    return isinstance(value, str)


def _is_range(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, dict) and value.keys() <= {"start", "end"})


def _parses_as(parse: Callable[[str], object]) -> Callable[[Any], bool]:
    return lambda value: isinstance(value, str) and _parses(lambda: parse(value))


def _parses(attempt: Callable[[], object]) -> bool:
    try:
        attempt()
    except (ValueError, InvalidOperation, binascii.Error):
        return False
    return True


_ACCEPTS: dict[str, Callable[[Any], bool]] = {
    "STRING": _is_string,
    "INTEGER": _is_integer,
    "FLOAT": _is_float,
    "NUMERIC": _is_numeric,
    "BOOLEAN": _is_boolean,
    "TIMESTAMP": _is_timestamp,
    "DATETIME": _parses_as(datetime.fromisoformat),
    "DATE": _parses_as(date.fromisoformat),
    "TIME": _parses_as(time.fromisoformat),
    "JSON": _parses_as(json.loads),
    "BYTES": _parses_as(lambda text: base64.b64decode(text, validate=True)),
    "GEOGRAPHY": _is_text,
    "INTERVAL": _is_text,
    "RANGE": _is_range,
}
