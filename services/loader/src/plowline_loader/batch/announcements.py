"""Which entity types to announce on the types topic, deduplicated within this process.

The mutator adds a column when it reads a type from the types topic. The loader tells it
about a type the first time a good row needs it, but only when the table (per the cached
schema) has no column for it, or when the table rejected a row for a field under that
type's column (a new minor version in ``major`` column mode adds nested fields to an
existing column).

Notes:
    One tracker per process (per Spark Python worker): a type is announced at most once
    every ``republish_after_s`` seconds, so a lost or ignored announcement is repeated
    while rows keep needing it, without flooding the topic. Thread-safe; pure (the time
    is passed in).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Iterable, Sequence
from datetime import datetime

from plowline_core.messages import encode_types
from plowline_core.ports import Publisher
from plowline_core.schema.entity import ColumnMode, EntityType
from plowline_core.schema.field import Field
from plowline_core.schema.names import column_name

DEFAULT_REPUBLISH_AFTER_S = 600.0


class TypeTracker:
    """Pick the entity types worth publishing now and remember the ones published."""

    def __init__(
        self,
        column_mode: ColumnMode,
        republish_after_s: float = DEFAULT_REPUBLISH_AFTER_S,
        *,
        routes: Callable[[EntityType], str | None] | None = None,
    ) -> None:
        self._mode = column_mode
        self._routes = routes
        self._republish_after_s = republish_after_s
        self._published: dict[EntityType, datetime] = {}
        self._columns: dict[EntityType, str] = {}
        self._table_names: tuple[Sequence[Field] | None, frozenset[str]] = (None, frozenset())
        self._lock = threading.Lock()

    def column_of(self, entity: EntityType) -> str:
        """Return the table column that holds ``entity`` (lower case).

        Notes:
            ``routes`` (the row builder's ``column_of``) names the column the rows use: in
            ``major`` mode a recovery or legacy column, not the model's column.
        """
        column = self._columns.get(entity)
        if column is None:
            routed = self._routes(entity) if self._routes is not None else None
            name = routed or column_name(entity.schema, entity.shred_property, self._mode)
            column = name.lower()
            self._columns[entity] = column
        return column

    def missing(
        self, types: Iterable[EntityType], table: Sequence[Field], now: datetime
    ) -> list[EntityType]:
        """Return the types whose column ``table`` lacks and that are not published recently."""
        names = self._names(table)
        with self._lock:
            return sorted(
                entity
                for entity in set(types)
                if self.column_of(entity) not in names and not self._recent(entity, now)
            )

    def implicated(
        self, types: Iterable[EntityType], columns: Collection[str], now: datetime
    ) -> list[EntityType]:
        """Return the types stored in one of ``columns`` that are not published recently."""
        wanted = {column.lower() for column in columns}
        with self._lock:
            return sorted(
                entity
                for entity in set(types)
                if self.column_of(entity) in wanted and not self._recent(entity, now)
            )

    def mark_published(self, types: Iterable[EntityType], now: datetime) -> None:
        """Remember that ``types`` were published at ``now``."""
        with self._lock:
            for entity in types:
                self._published[entity] = now

    def _recent(self, entity: EntityType, now: datetime) -> bool:
        published = self._published.get(entity)
        return published is not None and (now - published).total_seconds() < self._republish_after_s

    def _names(self, table: Sequence[Field]) -> frozenset[str]:
        # The schema store returns the same tuple until it refreshes: cache by identity
        # (holding the tuple itself, so its id cannot be reused while cached).
        cached, names = self._table_names
        if cached is not table:
            names = frozenset(field.name.lower() for field in table)
            self._table_names = (table, names)
        return names


def announce(
    tracker: TypeTracker, topic: Publisher, types: Sequence[EntityType], now: datetime
) -> int:
    """Publish ``types`` as one types message, remember them as published; return how many."""
    if not types:
        return 0
    topic.publish([encode_types(types)])
    tracker.mark_published(types, now)
    return len(types)


def distinct_types(sets: Iterable[frozenset[EntityType]]) -> set[EntityType]:
    """Return the union of ``sets``, each distinct set (by identity) read once."""
    # Rows share their type sets (the row builder caches them): union each set once.
    distinct = {id(types): types for types in sets}
    return set().union(*distinct.values()) if distinct else set()
