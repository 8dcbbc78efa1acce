"""An Iglu registry held in memory, which a test can make fail on demand."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from plowline_core.errors import RegistryUnavailable
from plowline_core.iglu.key import SchemaKey


class InMemoryRegistry:
    """Satisfy ``Registry`` from a dict; count lookups; set ``failing`` to simulate an outage."""

    def __init__(
        self,
        name: str,
        schemas: Mapping[SchemaKey, Mapping[str, Any]] | None = None,
        failing: bool = False,
    ) -> None:
        self._name = name
        self.schemas: dict[SchemaKey, Mapping[str, Any]] = dict(schemas or {})
        self.failing = failing
        self.lookups = 0
        self.looked_up: list[SchemaKey] = []

    @property
    def name(self) -> str:
        """The repository's name."""
        return self._name

    def lookup(self, key: SchemaKey) -> Mapping[str, Any] | None:
        """Return the schema or None; raise RegistryUnavailable while ``failing``."""
        self.lookups += 1
        self.looked_up.append(key)
        if self.failing:
            raise RegistryUnavailable(f"{self._name} is failing (test double)")
        return self.schemas.get(key)

    def add(self, key: SchemaKey, schema: Mapping[str, Any]) -> None:
        """Publish a schema to the registry."""
        self.schemas[key] = schema
