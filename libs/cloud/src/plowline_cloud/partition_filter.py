"""A filter on the events table's partition column that covers given rows (for lookups by id).

A table created with ``--requirePartitionFilter`` refuses every query without a filter
on its partition column that BigQuery can prune by. Exactly-once recovery asks the
events table which event ids landed (``SELECT … WHERE event_id IN UNNEST(@ids)``), so
it adds ``partition_filter``: a ``BETWEEN`` on the partition column wide enough to hold
every row of those ids wherever it landed.

Notes:
    The range covers each row's own value of the column (an event-time column such as
    ``collector_tstamp``: the row keeps its value) and the ledger's lookback window up
    to tomorrow (a load-time column, or a value the row leaves to BigQuery such as
    ``AUTO``: it landed after its ledger entry was prepared). A row whose value is NULL
    adds ``OR col IS NULL`` (the ``__NULL__`` partition). Ingestion-time partitioning (no
    column) filters ``_PARTITIONTIME`` on the lookback window. Pure: the table's
    partitioning is read by the caller.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from google.cloud import bigquery

_INGESTION = "_PARTITIONTIME"


@dataclass(frozen=True, slots=True)
class Partitioning:
    """How the events table is partitioned, as far as a query must know.

    Attributes:
        column: the partition column (``_PARTITIONTIME`` for ingestion time).
        type: its BigQuery type: ``TIMESTAMP``, ``DATE`` or ``DATETIME``.
        required: the table refuses queries without a filter on it.
    """

    column: str
    type: str
    required: bool


def partitioning_of(table: bigquery.Table) -> Partitioning | None:
    """Return the table's time partitioning, or None when it has none."""
    spec = table.time_partitioning
    if spec is None:
        return None
    if not spec.field:
        return Partitioning(_INGESTION, "TIMESTAMP", bool(table.require_partition_filter))
    types = {field.name.lower(): field.field_type for field in table.schema}
    kind = str(types.get(spec.field.lower(), "TIMESTAMP")).upper()
    return Partitioning(spec.field, kind, bool(table.require_partition_filter))


def partition_filter(
    partitioning: Partitioning,
    rows: Sequence[Mapping[str, Any]],
    now: datetime,
    lookback_days: int,
) -> tuple[str, list[bigquery.ScalarQueryParameter]]:
    """Return ``(col BETWEEN @part_lo AND @part_hi …)`` covering ``rows``, and its parameters."""
    low = now - timedelta(days=lookback_days + 1)
    high = now + timedelta(days=1)
    has_null = False
    if partitioning.column != _INGESTION:
        for row in rows:
            raw = next(
                (v for k, v in row.items() if k.lower() == partitioning.column.lower()), None
            )
            has_null = has_null or raw is None
            value = _moment(raw)
            if value is not None:
                low, high = min(low, value), max(high, value)
    column = f"`{partitioning.column}`" if partitioning.column != _INGESTION else _INGESTION
    clause = f"{column} BETWEEN @part_lo AND @part_hi"
    if has_null:
        clause = f"({clause} OR {column} IS NULL)"
    bound = _bound(partitioning.type)
    params = [
        bigquery.ScalarQueryParameter("part_lo", partitioning.type, bound(low, floor=True)),
        bigquery.ScalarQueryParameter("part_hi", partitioning.type, bound(high, floor=False)),
    ]
    return clause, params


def _moment(raw: Any) -> datetime | None:
    """Return a column value as a UTC datetime (None: NULL or unreadable, such as ``AUTO``)."""
    if isinstance(raw, datetime):
        return raw if raw.tzinfo else raw.replace(tzinfo=UTC)
    if isinstance(raw, date):
        return datetime(raw.year, raw.month, raw.day, tzinfo=UTC)
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        return datetime.fromtimestamp(raw, UTC)
    if isinstance(raw, str):
        try:
            parsed = datetime.fromisoformat(raw.replace(" UTC", "+00:00").replace("Z", "+00:00"))
        except ValueError:
            return None  # "AUTO" and the like: covered by the lookback window
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    return None


def _bound(kind: str) -> Any:
    def bound(moment: datetime, *, floor: bool) -> Any:
        if kind == "DATE":
            return moment.date() if floor else (moment + timedelta(days=1)).date()
        if kind == "DATETIME":
            return moment.astimezone(UTC).replace(tzinfo=None)
        return moment

    return bound
