"""The mutator's service layer: turn entity types into the columns the events table lacks.

``Mutator.add_types`` resolves each type's schema, builds its column (``column_field``),
plans the widening against the table fields it knows (re-reading them once on a miss) and
adds every missing column of one call in ONE ``add_fields`` patch.

Notes:
    Widening only: a column the table holds under another type or mode is a ``Conflict``,
    reported and left alone. A schema no repository has is reported in ``unknown`` (the
    loader publishes the type again when it sees it again); it does not block the others.
    ``RegistryUnavailable`` and the store's ``TransientError`` propagate: the caller does
    not ack (listener) or answers 503 (HTTP).
    The lock serializes table updates between the listener and the HTTP API of one
    process; schemas are resolved outside it (a slow registry does not hold the table).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

import structlog
from plowline_core.errors import PermanentError
from plowline_core.iglu.key import SchemaKey
from plowline_core.iglu.resolver import Resolution, SchemaNotFound
from plowline_core.ports import TableSchemaStore
from plowline_core.schema.columns import column_field
from plowline_core.schema.entity import ColumnMode, EntityType
from plowline_core.schema.field import Field
from plowline_core.schema.names import is_valid_name
from plowline_core.schema.widening import Conflict, WideningPlan, plan_widening

_log = structlog.get_logger("plowline.mutator")


class SchemaResolver(Protocol):
    """What the mutator needs of an Iglu resolver (``plowline_core.iglu.resolver.Resolver``)."""

    def resolve(self, key: SchemaKey) -> Resolution:
        """Return the schema or SchemaNotFound; raise RegistryUnavailable on a failing repo."""
        ...


@dataclass(frozen=True, slots=True)
class MutationResult:
    """What one ``add_types`` call found and did.

    ``columns`` maps each resolved type to the column it needs (as the table now has it when
    it existed); ``added`` holds the top-level fields the patch added or widened.
    """

    columns: Mapping[EntityType, Field] = field(default_factory=dict)
    added: tuple[Field, ...] = ()
    unknown: tuple[EntityType, ...] = ()
    conflicts: tuple[Conflict, ...] = ()

    @property
    def added_names(self) -> frozenset[str]:
        """Return the lower-cased names of the columns the patch added or widened."""
        return frozenset(f.name.lower() for f in self.added)

    def was_added(self, entity: EntityType) -> bool:
        """Say whether this call's patch created or widened the type's column."""
        column = self.columns.get(entity)
        return column is not None and column.name.lower() in self.added_names

    def conflicts_of(self, entity: EntityType) -> tuple[Conflict, ...]:
        """Return the conflicts found in the type's column."""
        column = self.columns.get(entity)
        if column is None:
            return ()
        prefix = column.name.lower()
        return tuple(c for c in self.conflicts if c.path.lower().split(".")[0] == prefix)


class Mutator:
    """Add the columns entity types need to the events table (widening only)."""

    def __init__(
        self,
        resolver: SchemaResolver,
        schema_store: TableSchemaStore,
        column_mode: ColumnMode,
        lock: AbstractContextManager[Any],
    ) -> None:
        self._resolver = resolver
        self._store = schema_store
        self._mode = column_mode
        self._lock = lock
        # column name -> the type it was built from, for GET /v1/columns (names lose detail).
        self._seen: dict[str, EntityType] = {}

    @property
    def column_mode(self) -> ColumnMode:
        """The column naming and typing rules in force."""
        return self._mode

    def known_types(self) -> dict[str, EntityType]:
        """Return the types whose columns this process built, by lower-cased column name."""
        return dict(self._seen)

    def column_for(self, entity: EntityType) -> Field | SchemaNotFound:
        """Return the column an entity type needs (no table access), or SchemaNotFound.

        Raises:
            RegistryUnavailable: a repository could not answer.
            PermanentError: the column name is not a legal BigQuery name.
        """
        resolution = self._resolver.resolve(entity.schema)
        if isinstance(resolution, SchemaNotFound):
            return resolution
        column = column_field(entity.schema, resolution.schema, entity.shred_property, self._mode)
        if not is_valid_name(column.name):
            raise PermanentError(
                f"{entity.schema.to_uri()}: {column.name!r} is no legal column name"
            )
        self._seen[column.name.lower()] = entity
        return column

    def add_types(self, types: Iterable[EntityType]) -> MutationResult:
        """Add every column the types need and the table lacks, in one patch.

        Raises:
            RegistryUnavailable: a repository could not answer (nothing was changed).
            TransientError: BigQuery kept failing; PermanentError: it refused the change.
        """
        columns: dict[EntityType, Field] = {}
        unknown: list[EntityType] = []
        for entity in dict.fromkeys(types):
            column = self.column_for(entity)
            if isinstance(column, SchemaNotFound):
                _log.warning(
                    "schema not found",
                    schema=entity.schema.to_uri(),
                    shred_property=entity.shred_property.value,
                )
                unknown.append(entity)
            else:
                columns[entity] = column
        if not columns:
            return MutationResult(unknown=tuple(unknown))
        with self._lock:
            plan, added = self._widen(tuple(dict.fromkeys(columns.values())))
        for conflict in plan.conflicts:
            _log.error("column conflict", path=conflict.path, reason=conflict.reason)
        return MutationResult(
            columns=_as_in_table(columns, plan.schema),
            added=added,
            unknown=tuple(unknown),
            conflicts=plan.conflicts,
        )

    def _widen(self, needed: tuple[Field, ...]) -> tuple[WideningPlan, tuple[Field, ...]]:
        plan = plan_widening(self._store.fields(), needed)
        if plan.is_empty:
            return plan, ()
        # The cached view may be stale (the table widened elsewhere): look again before patching.
        plan = plan_widening(self._store.refresh(), needed)
        if plan.is_empty:
            return plan, ()
        touched = {f.name.lower() for f in plan.additions}
        touched.update(parent.split(".")[0].lower() for parent, _ in plan.nested_additions)
        added = self._store.add_fields([f for f in needed if f.name.lower() in touched])
        for column in added:
            _log.info(
                "column added", column=column.name, type=column.type.value, mode=column.mode.value
            )
        return plan, added


def _as_in_table(
    columns: Mapping[EntityType, Field], table: tuple[Field, ...]
) -> dict[EntityType, Field]:
    by_name = {f.name.lower(): f for f in table}
    return {entity: by_name.get(col.name.lower(), col) for entity, col in columns.items()}
