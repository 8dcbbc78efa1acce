"""An in-memory events table schema that behaves like ``BigQueryTableSchemaStore``."""

from __future__ import annotations

from collections.abc import Sequence

from plowline_core.errors import PermanentError, PlowlineError
from plowline_core.schema.field import Field
from plowline_core.schema.widening import plan_widening


class InMemoryTableSchemaStore:
    """Satisfy ``TableSchemaStore`` with a "backend" schema and a cached view of it.

    Notes:
        As with BigQuery, ``fields()`` returns the cached view (it never refreshes by
        itself here: tests call ``refresh``); ``widen_backend`` plays another process
        (the mutator) changing the table behind the cache's back. ``add_fields`` widens
        through ``plan_widening`` like the adapter: new columns and nested fields only.
        ``refused`` names columns the backend refuses, as BigQuery refuses a patch with
        400: a patch holding one of them fails whole with ``PermanentError``.
    """

    def __init__(self, fields: Sequence[Field] = ()) -> None:
        self._backend: tuple[Field, ...] = tuple(fields)
        self._cached: tuple[Field, ...] = self._backend
        self.refreshes = 0
        self.patches: list[tuple[Field, ...]] = []
        self.fail_with: PlowlineError | None = None
        self.refused: dict[str, str] = {}

    @property
    def backend(self) -> tuple[Field, ...]:
        """The table's schema as the backend has it now."""
        return self._backend

    def fields(self) -> tuple[Field, ...]:
        """Return the cached fields (the same tuple until a refresh or a patch)."""
        self._maybe_fail()
        return self._cached

    def refresh(self) -> tuple[Field, ...]:
        """Read the backend schema into the cache and return it."""
        self._maybe_fail()
        self.refreshes += 1
        self._cached = self._backend
        return self._cached

    def add_fields(self, fields: Sequence[Field]) -> tuple[Field, ...]:
        """Widen the backend with ``fields`` in one patch; return the fields that changed it."""
        self._maybe_fail()
        refused = [self.refused[f.name.lower()] for f in fields if f.name.lower() in self.refused]
        if refused:
            raise PermanentError(f"400 {'; '.join(refused)}")
        plan = plan_widening(self._backend, fields)
        if plan.is_empty:
            self._cached = self._backend
            return ()
        before = {field.name.lower(): field for field in self._backend}
        changed = tuple(f for f in plan.schema if before.get(f.name.lower()) != f)
        self._backend = plan.schema
        self._cached = self._backend
        self.patches.append(changed)
        return changed

    def widen_backend(self, fields: Sequence[Field]) -> None:
        """Add fields to the backend only, as another process would (the cache goes stale)."""
        self._backend = plan_widening(self._backend, fields).schema

    def _maybe_fail(self) -> None:
        if self.fail_with is not None:
            raise self.fail_with
