"""The events table's schema in BigQuery: cached reads and widening patches.

Notes:
    Widening only (``plan_widening``): ``add_fields`` appends new top-level columns and
    missing nested sub-fields of existing RECORDs; it never drops, renames or retypes.
    Existing columns are carried over in BigQuery's own JSON (descriptions, policy tags
    kept). Every patch carries the etag it read (``If-Match``), so a concurrent change
    gives 412 and we re-read, re-merge and patch again, with bounded backoff.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from google.api_core import exceptions as gexc
from google.cloud import bigquery
from google.cloud.bigquery.retry import DEFAULT_RETRY
from plowline_core.errors import PermanentError
from plowline_core.ports import Clock
from plowline_core.schema.field import Field
from plowline_core.schema.widening import plan_widening
from tenacity import (
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    stop_after_delay,
    wait_exponential_jitter,
)

from plowline_cloud.errors import error_reasons, translated

_RATE_LIMIT_TEXT = "too many table update operations"


def table_reference(client: bigquery.Client, table_ref: str | bigquery.TableReference) -> Any:
    """Return a TableReference for ``project.dataset.table`` (project defaults to the client's)."""
    if isinstance(table_ref, bigquery.TableReference):
        return table_ref
    return bigquery.TableReference.from_string(table_ref, default_project=client.project)


def fields_of(table: bigquery.Table) -> tuple[Field, ...]:
    """Return a BigQuery table's schema as our fields."""
    return tuple(Field.from_api(sub.to_api_repr()) for sub in table.schema)


def is_update_conflict(exc: BaseException) -> bool:
    """Say whether a table patch failed for a reason a re-read and retry resolves."""
    if isinstance(exc, gexc.PreconditionFailed):
        return True
    if isinstance(exc, gexc.Forbidden | gexc.TooManyRequests):
        return "rateLimitExceeded" in error_reasons(exc) or _RATE_LIMIT_TEXT in str(exc).lower()
    return False


def merge_schema(
    current: Sequence[dict[str, Any]], new: Sequence[Field]
) -> tuple[list[dict[str, Any]], tuple[Field, ...]]:
    """Return the current schema JSON widened with ``new``, and the fields that changed it.

    Notes:
        ``plan_widening`` decides (widening only: conflicts are left alone). Unchanged
        columns are sent back exactly as BigQuery gave them; a widened RECORD keeps its
        own description and other keys.
    """
    plan = plan_widening(tuple(Field.from_api(item) for item in current), new)
    if plan.is_empty:
        return [dict(item) for item in current], ()
    originals = {str(item["name"]).lower(): item for item in current}
    merged: list[dict[str, Any]] = []
    changed: list[Field] = []
    for field in plan.schema:
        original = originals.get(field.name.lower())
        if original is not None and Field.from_api(original) == field:
            merged.append(dict(original))
            continue
        merged.append({**(original or {}), **field.to_api()})
        changed.append(field)
    return merged, tuple(changed)


class BigQueryTableSchemaStore:
    """The schema of one BigQuery table (satisfies ``TableSchemaStore``)."""

    def __init__(
        self,
        client: bigquery.Client,
        table_ref: str | bigquery.TableReference,
        refresh_interval: float,
        clock: Clock,
        *,
        timeout: float = 30.0,
        retry_deadline: float = 60.0,
        max_update_attempts: int = 8,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._client = client
        self._table = table_reference(client, table_ref)
        self._interval = refresh_interval
        self._clock = clock
        self._timeout = timeout
        self._retry = DEFAULT_RETRY.with_deadline(retry_deadline)
        self._attempts = max_update_attempts
        self._deadline = retry_deadline
        self._sleep = sleep
        self._lock = threading.Lock()
        self._cached: tuple[Field, ...] | None = None
        self._fetched_at: datetime | None = None

    @property
    def table_id(self) -> str:
        """The table as ``project.dataset.table``."""
        return f"{self._table.project}.{self._table.dataset_id}.{self._table.table_id}"

    def fields(self) -> tuple[Field, ...]:
        """Return the cached top-level fields, re-reading them once ``refresh_interval`` passed."""
        with self._lock:
            cached, fetched_at = self._cached, self._fetched_at
        if cached is None or fetched_at is None:
            return self.refresh()
        if (self._clock.now() - fetched_at).total_seconds() >= self._interval:
            return self.refresh()
        return cached

    def refresh(self) -> tuple[Field, ...]:
        """Read the schema from BigQuery now, cache it and return it."""
        return self._remember(self._get_table())

    def add_fields(self, fields: Sequence[Field]) -> tuple[Field, ...]:
        """Widen the table with ``fields`` in one patch; return the fields that changed it.

        Raises:
            TransientError: BigQuery kept refusing (rate limit, concurrent changes).
            PermanentError: BigQuery rejected the new schema.
        """
        retrying = Retrying(
            retry=retry_if_exception(is_update_conflict),
            stop=stop_after_attempt(self._attempts) | stop_after_delay(self._deadline),
            wait=wait_exponential_jitter(multiplier=0.5, max=10.0, jitter=0.5),
            sleep=self._sleep,
            reraise=True,
        )
        with translated(f"add fields to {self.table_id}"):
            return retrying(self._add_once, tuple(fields))

    def _add_once(self, fields: tuple[Field, ...]) -> tuple[Field, ...]:
        table = self._client.get_table(self._table, retry=self._retry, timeout=self._timeout)
        current = [sub.to_api_repr() for sub in table.schema]
        merged, changed = merge_schema(current, fields)
        if not changed:
            self._remember(table)
            return ()
        table.schema = [bigquery.SchemaField.from_api_repr(item) for item in merged]
        updated = self._client.update_table(
            table, ["schema"], retry=self._retry, timeout=self._timeout
        )
        self._verify(self._remember(updated), fields)
        return changed

    def _verify(self, have: tuple[Field, ...], wanted: tuple[Field, ...]) -> None:
        names = {field.name.lower() for field in have}
        missing = [field.name for field in wanted if field.name.lower() not in names]
        if missing:
            raise PermanentError(
                f"add fields to {self.table_id}: BigQuery accepted the patch "
                f"but the schema lacks {', '.join(missing)}"
            )

    def _get_table(self) -> bigquery.Table:
        with translated(f"read schema of {self.table_id}"):
            return self._client.get_table(self._table, retry=self._retry, timeout=self._timeout)

    def _remember(self, table: bigquery.Table) -> tuple[Field, ...]:
        fields = fields_of(table)
        now = self._clock.now()
        with self._lock:
            self._cached, self._fetched_at = fields, now
        return fields
