"""Correction: RECORD sub-fields may carry any valid BigQuery name, SQL keywords included.

Real BigQuery: a RECORD's sub-field may be called ``inner``, ``order``, ``group`` or
``select``; only top-level column names are compared against the reserved-word list in
(unquoted) SQL, and the REST API never cares. Snowplow entity columns are nested RECORDs
whose sub-fields are the schema's JSON property names, so such names do occur.

bqemulator 1.4.0 writes nested names unquoted into DuckDB DDL (``STRUCT(inner BIGINT)``),
so ``tables.insert`` (and any schema with such a sub-field) fails with HTTP 500
(``Parser Error: syntax error at or near "inner"``). This correction renders DuckDB column
types with every nested name quoted, for table creation, load jobs and our own
``ALTER TABLE … ADD COLUMN`` statements.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import bqemulator.api.routes.tables
import bqemulator.storage.type_map

from plowline_devstack.bigquery.interception import Correction

ColumnTypes = Callable[[list[dict[str, Any]]], list[tuple[str, str]]]

_SHIPPED: ColumnTypes = bqemulator.storage.type_map.bq_schema_to_duckdb_columns


def quote(name: str) -> str:
    """Quote a DuckDB identifier."""
    return '"' + name.replace('"', '""') + '"'


def duckdb_columns(fields: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Return ``(name, DuckDB type)`` per REST schema field, with nested names quoted."""
    columns: list[tuple[str, str]] = []
    for field in fields:
        if str(field.get("type", "")).upper() not in ("RECORD", "STRUCT"):
            columns.extend(_SHIPPED([field]))
            continue
        inner = ", ".join(
            f"{quote(name)} {kind}" for name, kind in duckdb_columns(field.get("fields") or [])
        )
        repeated = str(field.get("mode", "NULLABLE")).upper() == "REPEATED"
        columns.append((field["name"], f"STRUCT({inner})" + ("[]" if repeated else "")))
    return columns


def quote_nested_names() -> None:
    """Make the emulator render DuckDB column types through :func:`duckdb_columns`."""
    bqemulator.storage.type_map.bq_schema_to_duckdb_columns = duckdb_columns
    bqemulator.api.routes.tables.bq_schema_to_duckdb_columns = duckdb_columns  # type: ignore[attr-defined]  # imported by name there


NESTED_NAME_QUOTING = Correction(
    name="nested-name-quoting",
    summary="RECORD sub-fields named like SQL keywords are quoted in DuckDB DDL",
    patch=quote_nested_names,
)
