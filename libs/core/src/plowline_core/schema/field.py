"""The BigQuery field model: name, type, mode and nested fields.

Notes:
    Immutable and hashable. ``to_api`` / ``from_api`` speak BigQuery's schema JSON
    (``{"name", "type", "mode", "fields"}``), the form the REST API, ``bq`` and the
    ``preview`` command use.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class FieldType(StrEnum):
    """BigQuery column types plowline produces (legacy names, as the REST API uses)."""

    STRING = "STRING"
    INTEGER = "INTEGER"
    FLOAT = "FLOAT"
    BOOLEAN = "BOOLEAN"
    TIMESTAMP = "TIMESTAMP"
    DATE = "DATE"
    NUMERIC = "NUMERIC"
    JSON = "JSON"
    RECORD = "RECORD"


class Mode(StrEnum):
    """BigQuery field modes."""

    NULLABLE = "NULLABLE"
    REQUIRED = "REQUIRED"
    REPEATED = "REPEATED"


_TYPE_ALIASES = {
    "INT64": "INTEGER",
    "FLOAT64": "FLOAT",
    "BOOL": "BOOLEAN",
    "STRUCT": "RECORD",
    "BIGNUMERIC": "NUMERIC",
}


@dataclass(frozen=True, slots=True)
class Field:
    """One BigQuery column or nested sub-field."""

    name: str
    type: FieldType
    mode: Mode = Mode.NULLABLE
    fields: tuple[Field, ...] = ()

    def to_api(self) -> dict[str, Any]:
        """Return BigQuery schema JSON; ``fields`` only for RECORDs."""
        out: dict[str, Any] = {"name": self.name, "type": self.type.value, "mode": self.mode.value}
        if self.type is FieldType.RECORD:
            out["fields"] = [sub.to_api() for sub in self.fields]
        return out

    @classmethod
    def from_api(cls, data: dict[str, Any]) -> Field:
        """Build a Field from BigQuery schema JSON (standard-SQL type aliases accepted)."""
        raw_type = str(data["type"]).upper()
        return cls(
            name=str(data["name"]),
            type=FieldType(_TYPE_ALIASES.get(raw_type, raw_type)),
            mode=Mode(str(data.get("mode") or "NULLABLE").upper()),
            fields=tuple(cls.from_api(sub) for sub in data.get("fields") or ()),
        )

    def with_name(self, name: str) -> Field:
        """Return the same field under another name."""
        return Field(name, self.type, self.mode, self.fields)

    def with_mode(self, mode: Mode) -> Field:
        """Return the same field with another mode."""
        return Field(self.name, self.type, mode, self.fields)
