"""Correction: a schema change by ``tables.patch`` / ``tables.update`` reaches storage.

Real BigQuery: adding a column (or a nested field of a RECORD, also inside a REPEATED
RECORD) with ``tables.patch`` or ``tables.update`` makes it writable at once; the next
insertAll may fill it.

bqemulator 1.4.0 changes only its catalog, not the DuckDB table behind it, so the next
insertAll fails with HTTP 500 (``table events has 40 columns but 41 values were
supplied``). This correction diffs the schema before and after the emulator's own
handler and runs ``ALTER TABLE … ADD COLUMN IF NOT EXISTS`` for every new field, with
struct paths for nested fields (``"rec"."sub"``, ``"reps"."element"."sub"``).

Notes:
    Both steps run under :data:`.storage_lock.WIDENING`, which every Write API append
    holds too: an append sees the table before or after a widening, never between.
    Widening only, like BigQuery's own patch: dropped or retyped fields are left alone.
    Any column type BigQuery has may be added (a RANGE column with its element type).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bqemulator.storage.sql_identifiers import quoted_table_ref

from plowline_devstack.bigquery.interception import Correction, Exchange, Reply
from plowline_devstack.bigquery.nested_names import duckdb_columns, quote
from plowline_devstack.bigquery.schema_rules import rest_field
from plowline_devstack.bigquery.storage_lock import widening_held

_TABLE = "/bigquery/v2/projects/{project}/datasets/{dataset}/tables/{table}"


async def alter_storage_on_schema_change(exchange: Exchange) -> Reply:
    """Run the emulator's patch/update, then add the new fields to the DuckDB table."""
    project, dataset, table = (
        exchange.params["project"],
        exchange.params["dataset"],
        exchange.params["table"],
    )
    catalog = exchange.context.catalog
    async with widening_held():  # no append sees the catalog widened and DuckDB not yet
        before = catalog.get_table(project, dataset, table)
        reply = await exchange.forward(exchange.body)
        after = catalog.get_table(project, dataset, table)
        if reply.status != 200 or before is None or after is None:
            return reply
        statements = add_column_statements(
            quoted_table_ref(project, dataset, table), before.schema_.fields, after.schema_.fields
        )
        engine = exchange.context.engine
        async with engine.write_lock():
            for statement in statements:
                engine.execute(statement)
    return reply


def add_column_statements(table_ref: str, before: Sequence[Any], after: Sequence[Any]) -> list[str]:
    """Return the DuckDB ``ALTER TABLE`` statements that add ``after``'s new fields."""
    return [
        f"ALTER TABLE {table_ref} ADD COLUMN IF NOT EXISTS {path} {duck_type}"
        for path, duck_type in _new_fields(before, after, ())
    ]


def _new_fields(
    before: Sequence[Any], after: Sequence[Any], path: tuple[str, ...]
) -> list[tuple[str, str]]:
    known = {f.name.lower(): f for f in before}
    added: list[tuple[str, str]] = []
    for field in after:
        old = known.get(field.name.lower())
        here = (*path, field.name)
        if old is None:
            added.append((_quoted_path(here), _duckdb_type(field)))
        elif field.type.upper() in ("RECORD", "STRUCT") and field.fields:
            # A list of structs is reached through DuckDB's "element" step.
            inner = (*here, "element") if field.mode.upper() == "REPEATED" else here
            added.extend(_new_fields(old.fields, field.fields, inner))
    return added


def _quoted_path(path: tuple[str, ...]) -> str:
    return ".".join(quote(part) for part in path)


def _duckdb_type(field: Any) -> str:
    [(_, duck_type)] = duckdb_columns([rest_field(field)])
    return duck_type


TABLE_PATCH_STORAGE = Correction(
    name="table-patch-storage",
    summary="tables.patch/update schema changes are applied to DuckDB storage too",
    methods=("PATCH", "PUT"),
    paths=(_TABLE,),
    handler=alter_storage_on_schema_change,
)
