"""What can go wrong when casting entity JSON: the loader_iglu_error/2-0-0 failure items.

Casters append these to an ``errors`` list instead of raising; the row builder turns
each into its bad-row failure item with ``to_failure(schema_key)``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class _Unexpected:
    """A value its field did not expect: both items of this shape in loader_iglu_error."""

    value: Any
    expected: str

    def to_failure(self, schema_key: str) -> dict[str, Any]:
        """Return the loader_iglu_error/2-0-0 failure item."""
        return {"schemaKey": schema_key, "value": self.value, "expected": self.expected}


@dataclass(frozen=True, slots=True)
class WrongType(_Unexpected):
    """A value of the wrong JSON type for its field (``expected`` is the BigQuery type)."""


@dataclass(frozen=True, slots=True)
class NotAnArray(_Unexpected):
    """A REPEATED field given something other than an array or null."""


@dataclass(frozen=True, slots=True)
class MissingInValue:
    """A REQUIRED key absent from its object (``value`` is the whole object)."""

    key: str
    value: Any

    def to_failure(self, schema_key: str) -> dict[str, Any]:
        """Return the loader_iglu_error/2-0-0 failure item."""
        return {"schemaKey": schema_key, "key": self.key, "value": self.value}


CastError = WrongType | NotAnArray | MissingInValue
Caster = Callable[[Any, list[CastError]], Any]
"""A compiled caster: ``caster(value, errors) -> bigquery_value``."""
