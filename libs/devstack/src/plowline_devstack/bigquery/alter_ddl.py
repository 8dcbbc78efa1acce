"""Correction: ``ALTER TABLE … ADD COLUMN`` run as a query job shows in the catalog.

Real BigQuery: after ``ALTER TABLE ds.t ADD COLUMN c STRING`` (a query job through
``jobs.insert`` or ``jobs.query``) the column is part of the table: ``tables.get``
lists it and insertAll accepts it.

bqemulator 1.4.0 runs the statement on DuckDB but never updates its catalog, so
``tables.get`` does not show the column (and insertAll, which builds its rows from the
catalog schema, never fills it). This correction lets the emulator run the job, then
adds every column DuckDB has and the catalog lacks (nested RECORD fields included) to
the catalog entry of each ``ALTER TABLE`` target.

Notes:
    Reconciles towards DuckDB, which is the truth after the job ran; existing catalog
    fields keep their types, modes and descriptions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlglot
from bqemulator.catalog.etag import generate_etag
from bqemulator.catalog.models import TableFieldSchema, TableSchema
from bqemulator.storage.sql_identifiers import quoted_table_ref
from bqemulator.storage.type_map import duckdb_type_to_bq_field
from sqlglot import exp

from plowline_devstack.bigquery.interception import Correction, Exchange, Reply


async def sync_catalog_after_alter(exchange: Exchange) -> Reply:
    """Run the query job, then reflect the ``ALTER TABLE`` targets' DuckDB columns in the catalog."""
    reply = await exchange.forward(exchange.body)
    if reply.status != 200:
        return reply
    sql, default_project, default_dataset = _query_of(exchange.json(), exchange.params["project"])
    for project, dataset, table in alter_targets(sql, default_project, default_dataset):
        _reconcile(exchange.context, project, dataset, table)
    return reply


def _query_of(body: dict[str, Any], project: str) -> tuple[str, str, str]:
    """Return ``(sql, default project, default dataset)`` of a jobs.insert or jobs.query body."""
    config = (body.get("configuration") or {}).get("query") or body
    default = config.get("defaultDataset") or {}
    return (
        str(config.get("query") or ""),
        str(default.get("projectId") or project),
        str(default.get("datasetId") or ""),
    )


def alter_targets(sql: str, project: str, dataset: str) -> list[tuple[str, str, str]]:
    """Return ``(project, dataset, table)`` of every ``ALTER TABLE`` statement in ``sql``."""
    if "alter" not in sql.lower():
        return []
    try:
        statements = sqlglot.parse(sql, read="bigquery")
    except sqlglot.errors.SqlglotError:
        return []
    targets = []
    for statement in statements:
        if isinstance(statement, exp.Alter) and isinstance(statement.this, exp.Table):
            table = statement.this
            targets.append((table.catalog or project, table.db or dataset, table.name))
    return [t for t in targets if t[1] and t[2]]


def _reconcile(context: Any, project: str, dataset: str, table: str) -> None:
    meta = context.catalog.get_table(project, dataset, table)
    if meta is None:
        return
    rows = context.engine.execute(
        f"DESCRIBE {quoted_table_ref(project, dataset, table)}"
    ).fetchall()
    stored = [_from_rest(duckdb_type_to_bq_field(str(r[0]), str(r[1]))) for r in rows]
    merged = merge_fields(meta.schema_.fields, stored)
    if merged == tuple(meta.schema_.fields):
        return
    now = context.clock.now()
    context.catalog.update_table(
        meta.model_copy(
            update={
                "schema_": TableSchema(fields=merged),
                "last_modified_time": now,
                "etag": generate_etag(project, dataset, table, str(now)),
            }
        )
    )


def merge_fields(
    known: Sequence[TableFieldSchema], stored: Sequence[TableFieldSchema]
) -> tuple[TableFieldSchema, ...]:
    """Return ``known`` with the fields only ``stored`` has appended (recursively)."""
    by_name = {f.name.lower(): f for f in stored}
    merged = []
    for field in known:
        twin = by_name.get(field.name.lower())
        if twin is not None and field.fields and twin.fields:
            field = field.model_copy(update={"fields": merge_fields(field.fields, twin.fields)})
        merged.append(field)
    names = {f.name.lower() for f in known}
    merged.extend(f for f in stored if f.name.lower() not in names)
    return tuple(merged)


def _from_rest(raw: dict[str, Any]) -> TableFieldSchema:
    return TableFieldSchema(
        name=_unquote(str(raw["name"])),
        type=raw["type"],
        mode=raw.get("mode", "NULLABLE"),
        fields=tuple(_from_rest(sub) for sub in raw.get("fields") or ()),
    )


def _unquote(name: str) -> str:
    """Undo DuckDB's quoting of keyword-like names inside STRUCT type strings."""
    if len(name) >= 2 and name[0] == name[-1] == '"':
        return name[1:-1].replace('""', '"')
    return name


ALTER_DDL_CATALOG = Correction(
    name="alter-ddl-catalog",
    summary="ALTER TABLE … ADD COLUMN query jobs are reflected in the catalog (tables.get)",
    methods=("POST",),
    paths=("/bigquery/v2/projects/{project}/jobs", "/bigquery/v2/projects/{project}/queries"),
    handler=sync_catalog_after_alter,
)
