"""The BigQuery field model: name, type, mode, nested fields, and BigQuery's own column options.

Every column type BigQuery has is understood (``FieldType``), and a type name this version
does not know (one BigQuery adds later) is read as ``FieldType.OTHER`` with its name kept:
a table column is never a reason to stop. ``from_api`` then ``to_api`` gives back exactly
the API's JSON: the type as BigQuery spelled it (``INT64``, ``STRUCT``, ``GEOGRAPHY``…), an
absent ``mode`` left absent, and every other key (description, policy tags, precision and
scale, maxLength, rangeElementType, defaultValueExpression, collation…) as it was, so a
schema patch never changes a column it did not mean to change.

Notes:
    Immutable and hashable. ``to_api`` / ``from_api`` speak BigQuery's schema JSON
    (``{"name", "type", "mode", "fields", …}``), the form the REST API, ``bq`` and the
    ``preview`` command use. Only ``type`` (the family, with aliases folded), ``mode``
    and a RECORD's ``fields`` mean anything to the core; the options ride along
    untouched (``ColumnOptions``). Fields built by the core carry no options.
    Row values: the core casts an entity by its Iglu schema, never by the table's column.
    When a hand-made column of another type holds an entity column's name, the mutator
    reports a conflict and the row goes out as the core built it; BigQuery (or the Write
    API encoder) refuses that row alone, and it becomes a failed insert.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any


class FieldType(StrEnum):
    """BigQuery column types (legacy names, as the REST API reports them).

    Notes:
        plowline writes STRING, INTEGER, FLOAT, NUMERIC, BOOLEAN, TIMESTAMP, DATE, JSON
        and RECORD; the others are read from tables (an analyst adds them by hand) and
        kept as they are. ``OTHER`` stands for a type name this version does not know:
        ``Field.type_name`` holds BigQuery's name for it.
    """

    STRING = "STRING"
    BYTES = "BYTES"
    INTEGER = "INTEGER"
    FLOAT = "FLOAT"
    NUMERIC = "NUMERIC"
    BIGNUMERIC = "BIGNUMERIC"
    BOOLEAN = "BOOLEAN"
    TIMESTAMP = "TIMESTAMP"
    DATE = "DATE"
    TIME = "TIME"
    DATETIME = "DATETIME"
    GEOGRAPHY = "GEOGRAPHY"
    JSON = "JSON"
    RECORD = "RECORD"
    RANGE = "RANGE"
    INTERVAL = "INTERVAL"
    OTHER = "OTHER"


class Mode(StrEnum):
    """BigQuery field modes."""

    NULLABLE = "NULLABLE"
    REQUIRED = "REQUIRED"
    REPEATED = "REPEATED"


_TYPE_ALIASES = {
    "INT64": FieldType.INTEGER,
    "FLOAT64": FieldType.FLOAT,
    "BOOL": FieldType.BOOLEAN,
    "STRUCT": FieldType.RECORD,
    "DECIMAL": FieldType.NUMERIC,
    "BIGDECIMAL": FieldType.BIGNUMERIC,
}
_KNOWN = {kind.value: kind for kind in FieldType if kind is not FieldType.OTHER}
_MODELLED_KEYS = frozenset({"name", "type", "mode"})


def field_type_of(name: str) -> FieldType:
    """Return the type family of a BigQuery type name (aliases folded, unknown → OTHER)."""
    upper = name.upper()
    return _KNOWN.get(upper) or _TYPE_ALIASES.get(upper) or FieldType.OTHER


@dataclass(frozen=True, slots=True)
class ColumnOptions:
    """What BigQuery said about a column beyond name, type family, mode and sub-fields.

    Notes:
        ``type_name`` is BigQuery's spelling of the type when it is not the family's
        legacy name (``INT64``, ``STRUCT``, an unknown name). ``extra`` holds every other
        key in the order given, each value as compact JSON text (hashable, exact).
    """

    type_name: str | None = None
    implicit_mode: bool = False
    extra: tuple[tuple[str, str], ...] = ()


NO_OPTIONS = ColumnOptions()


@dataclass(frozen=True, slots=True)
class Field:
    """One BigQuery column or nested sub-field.

    ``precision`` and ``scale`` are the decimal a NUMERIC or BIGNUMERIC value must fit
    (schema-ddl's ``Decimal(Digits<precision>, <scale>)``, from the JSON Schema in 2.x's
    rules: ``mapping_v2``); None for any other field, and for a column read from the table.
    They are what the caster checks, not column parameters: 2.x makes plain NUMERIC and
    BIGNUMERIC columns, so ``to_api`` leaves them out.
    """

    name: str
    type: FieldType
    mode: Mode = Mode.NULLABLE
    fields: tuple[Field, ...] = ()
    options: ColumnOptions = NO_OPTIONS
    precision: int | None = None
    scale: int | None = None

    @property
    def type_name(self) -> str:
        """The type as BigQuery names it (``INT64``, ``GEOGRAPHY``, a type unknown here…)."""
        return self.options.type_name or self.type.value

    def to_api(self) -> dict[str, Any]:
        """Return BigQuery schema JSON: the column as read, or as built (``fields`` for RECORDs)."""
        options = self.options
        out: dict[str, Any] = {"name": self.name, "type": self.type_name}
        if not (options.implicit_mode and self.mode is Mode.NULLABLE):
            out["mode"] = self.mode.value
        for key, text in options.extra:
            out[key] = json.loads(text)
        if self.type is FieldType.RECORD:
            out["fields"] = [sub.to_api() for sub in self.fields]
        return out

    @classmethod
    def from_api(cls, data: Mapping[str, Any]) -> Field:
        """Build a Field from BigQuery schema JSON; any type name is accepted and kept."""
        raw_type = str(data["type"])
        kind = field_type_of(raw_type)
        raw_mode = data.get("mode")
        nested = kind is FieldType.RECORD and isinstance(data.get("fields"), list)
        skip = _MODELLED_KEYS | {"fields"} if nested else _MODELLED_KEYS
        options = ColumnOptions(
            type_name=None if raw_type == kind.value else raw_type,
            implicit_mode=raw_mode is None,
            extra=tuple((key, _json_text(value)) for key, value in data.items() if key not in skip),
        )
        return cls(
            name=str(data["name"]),
            type=kind,
            mode=Mode(str(raw_mode or "NULLABLE").upper()),
            fields=tuple(cls.from_api(sub) for sub in data["fields"]) if nested else (),
            options=NO_OPTIONS if options == NO_OPTIONS else options,
        )

    def with_name(self, name: str) -> Field:
        """Return the same field under another name."""
        return replace(self, name=name)

    def with_mode(self, mode: Mode) -> Field:
        """Return the same field with another mode."""
        return replace(self, mode=mode)

    def with_fields(self, fields: tuple[Field, ...]) -> Field:
        """Return the same field (options kept) with other sub-fields."""
        return replace(self, fields=fields)


WRITTEN_TYPES = frozenset(
    {
        FieldType.STRING,
        FieldType.INTEGER,
        FieldType.FLOAT,
        FieldType.NUMERIC,
        FieldType.BOOLEAN,
        FieldType.TIMESTAMP,
        FieldType.DATE,
        FieldType.JSON,
        FieldType.RECORD,
    }
)
"""The types the core's JSON Schema mapping produces and its casters write."""


def _json_text(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
