"""The mutator's service layer: turn entity types into the columns the events table lacks.

``Mutator.add_types`` resolves each type's schema, builds its column (``column_field``),
plans the widening against the table fields it knows (re-reading them once on a miss) and
adds every missing column of one call in ONE ``add_fields`` patch.

Notes:
    One type never blocks another. What cannot be applied is reported per type and the
    rest of the call goes ahead:

    - a schema no repository has is ``unknown``;
    - a column the table holds under another type or mode is a ``Conflict``, left alone
      (widening only);
    - a column BigQuery would refuse is ``rejected`` with a ``Rejection`` kind: an
      illegal name anywhere in it (``illegal_name``), a table that would pass BigQuery's
      10,000 leaf fields (``column_limit``), or a column BigQuery refused when patched
      alone (``refused``: when a patch of several columns is refused, each is tried on
      its own so the refusal lands on the column that caused it).

    These are permanent for the type; the loader publishes a type again while its column
    is missing, so nothing is lost once the cause is fixed. ``RegistryUnavailable`` and
    the store's ``TransientError`` propagate (nothing is reported as done): the caller
    does not ack (listener) or answers 503 (HTTP). A ``PermanentError`` of the table
    itself (it is missing, access denied on reading it) propagates too.
    The lock serializes table updates between the listener and the HTTP API of one
    process; schemas are resolved outside it (a slow registry does not hold the table).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import structlog
from plowline_core.errors import PermanentError
from plowline_core.iglu.resolver import SchemaNotFound
from plowline_core.ports import SchemaResolver, TableSchemaStore
from plowline_core.schema.columns import column_field
from plowline_core.schema.ddl_json import InvalidSchema, check
from plowline_core.schema.entity import ColumnMode, EntityType
from plowline_core.schema.field import Field
from plowline_core.schema.legacy import NO_RULES, ColumnRules, legacy_field
from plowline_core.schema.limits import MAX_LEAF_FIELDS, illegal_names, split_at_limit
from plowline_core.schema.major import major_column
from plowline_core.schema.widening import Conflict, WideningPlan, plan_widening

_log = structlog.get_logger("plowline.mutator")


class Rejection(StrEnum):
    """Why a column can never be added to the table as it is."""

    ILLEGAL_NAME = "illegal_name"
    INVALID_SCHEMA = "invalid_schema"
    COLUMN_LIMIT = "column_limit"
    REFUSED = "refused"


@dataclass(frozen=True, slots=True)
class Rejected:
    """A type whose column cannot be added, why, and the details for a person."""

    entity: EntityType
    kind: Rejection
    reason: str


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
    rejected: tuple[Rejected, ...] = ()

    def rejection_of(self, entity: EntityType) -> Rejected | None:
        """Return why the type's column was not added, when it was rejected."""
        return next((r for r in self.rejected if r.entity == entity), None)

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
        *,
        rules: ColumnRules = NO_RULES,
    ) -> None:
        self._resolver = resolver
        self._rules = rules
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

    def column_for(self, entity: EntityType) -> Field | SchemaNotFound | None:
        """Return the column an entity type needs (no table access), SchemaNotFound, or None.

        None: the type needs no column (``major`` mode: 2.x adds none for an object without
        properties, nor for a schema ``rules`` skip). In ``major`` mode the column is the
        model's minor versions merged up to the type's, the type's recovery column
        (``plowline_core.schema.major``), or its 1.x column when ``rules`` make it legacy
        (``plowline_core.schema.legacy``).

        Raises:
            RegistryUnavailable: a repository could not answer.
            InvalidSchema: (``major``) a version up to the type's does not decode as JSON Schema.
        """
        if self._mode is ColumnMode.MAJOR:
            if self._rules.skips(entity.schema):
                return None
            if self._rules.legacy(entity.schema):
                return self._legacy_column(entity)
            major = major_column(entity.schema, entity.shred_property, self._resolver)
            if isinstance(major, SchemaNotFound):
                return major
            column = major.field
            if column is None:
                return None
        else:
            resolution = self._resolver.resolve(entity.schema)
            if isinstance(resolution, SchemaNotFound):
                return resolution
            column = column_field(
                entity.schema, resolution.schema, entity.shred_property, self._mode
            )
        self._seen[column.name.lower()] = entity
        return column

    def _legacy_column(self, entity: EntityType) -> Field | SchemaNotFound:
        resolution = self._resolver.resolve(entity.schema)
        if isinstance(resolution, SchemaNotFound):
            return resolution
        check(resolution.schema)
        column = legacy_field(entity.schema, resolution.schema, entity.shred_property)
        self._seen[column.name.lower()] = entity
        return column

    def add_types(self, types: Iterable[EntityType]) -> MutationResult:
        """Add every column the types need and the table lacks; report what cannot be added.

        Raises:
            RegistryUnavailable: a repository could not answer (nothing was changed).
            TransientError: BigQuery kept failing; PermanentError: the table cannot be read.
        """
        columns: dict[EntityType, Field] = {}
        unknown: list[EntityType] = []
        rejected: list[Rejected] = []
        for entity in dict.fromkeys(types):
            try:
                column = self.column_for(entity)
            except InvalidSchema as error:
                rejected.append(Rejected(entity, Rejection.INVALID_SCHEMA, str(error)))
                continue
            if column is None:
                continue
            if isinstance(column, SchemaNotFound):
                _log.warning(
                    "schema not found",
                    schema=entity.schema.to_uri(),
                    shred_property=entity.shred_property.value,
                )
                unknown.append(entity)
                continue
            problems = illegal_names(column)
            if problems:
                rejected.append(Rejected(entity, Rejection.ILLEGAL_NAME, "; ".join(problems)))
            else:
                columns[entity] = column
        plan: WideningPlan | None = None
        added: tuple[Field, ...] = ()
        if columns:
            with self._lock:
                plan, added, refused = self._widen(tuple(dict.fromkeys(columns.values())))
            rejected.extend(_rejections(columns, refused))
            for conflict in plan.conflicts:
                _log.error("column conflict", path=conflict.path, reason=conflict.reason)
        for item in rejected:
            _log.error(
                "column rejected",
                schema=item.entity.schema.to_uri(),
                shred_property=item.entity.shred_property.value,
                kind=item.kind.value,
                reason=item.reason,
            )
        refused_entities = {item.entity for item in rejected}
        kept = {e: c for e, c in columns.items() if e not in refused_entities}
        return MutationResult(
            columns=_as_in_table(kept, plan.schema) if plan is not None else {},
            added=added,
            unknown=tuple(unknown),
            conflicts=plan.conflicts if plan is not None else (),
            rejected=tuple(rejected),
        )

    def _widen(
        self, needed: tuple[Field, ...]
    ) -> tuple[WideningPlan, tuple[Field, ...], dict[str, tuple[Rejection, str]]]:
        cached = self._store.fields()
        fits, refused = self._fitting(cached, needed)
        plan = plan_widening(cached, fits)
        if plan.is_empty and not refused:
            return plan, (), {}
        # The cached view may be stale (the table widened elsewhere): look again before patching.
        table = self._store.refresh()
        fits, refused = self._fitting(table, needed)
        plan = plan_widening(table, fits)
        if plan.is_empty:
            return plan, (), refused
        touched = {f.name.lower() for f in plan.additions}
        touched.update(parent.split(".")[0].lower() for parent, _ in plan.nested_additions)
        patch = [f for f in fits if f.name.lower() in touched]
        added, bigquery_refused = self._patch(patch)
        refused.update(bigquery_refused)
        for column in added:
            _log.info(
                "column added", column=column.name, type=column.type.value, mode=column.mode.value
            )
        return plan_widening(self._store.fields(), fits), added, refused

    @staticmethod
    def _fitting(
        table: tuple[Field, ...], needed: tuple[Field, ...]
    ) -> tuple[tuple[Field, ...], dict[str, tuple[Rejection, str]]]:
        fits, over = split_at_limit(table, needed)
        reason = f"the table would pass BigQuery's limit of {MAX_LEAF_FIELDS} leaf fields"
        return fits, {f.name.lower(): (Rejection.COLUMN_LIMIT, reason) for f in over}

    def _patch(
        self, columns: list[Field]
    ) -> tuple[tuple[Field, ...], dict[str, tuple[Rejection, str]]]:
        """Patch all columns at once; when BigQuery refuses, patch each alone to find why."""
        try:
            return self._store.add_fields(columns), {}
        except PermanentError as error:
            if len(columns) == 1:
                return (), {columns[0].name.lower(): (Rejection.REFUSED, str(error))}
        added: list[Field] = []
        refused: dict[str, tuple[Rejection, str]] = {}
        for column in columns:
            try:
                added.extend(self._store.add_fields([column]))
            except PermanentError as error:
                refused[column.name.lower()] = (Rejection.REFUSED, str(error))
        return tuple(added), refused


def _rejections(
    columns: Mapping[EntityType, Field], refused: Mapping[str, tuple[Rejection, str]]
) -> list[Rejected]:
    rejected = []
    for entity, column in columns.items():
        found = refused.get(column.name.lower())
        if found is not None:
            rejected.append(Rejected(entity, *found))
    return rejected


def _as_in_table(
    columns: Mapping[EntityType, Field], table: tuple[Field, ...]
) -> dict[EntityType, Field]:
    by_name = {f.name.lower(): f for f in table}
    return {entity: by_name.get(col.name.lower(), col) for entity, col in columns.items()}
