"""BigQuery adapters in one import: the table's schema, the row sink, table creation."""

from __future__ import annotations

from plowline_cloud.events_table import create_events_table, field_differences
from plowline_cloud.row_sink import MAX_REQUEST_BYTES, MAX_ROWS_PER_REQUEST, BigQueryRowSink
from plowline_cloud.table_schema import BigQueryTableSchemaStore, merge_schema, table_reference

__all__ = [
    "MAX_REQUEST_BYTES",
    "MAX_ROWS_PER_REQUEST",
    "BigQueryRowSink",
    "BigQueryTableSchemaStore",
    "create_events_table",
    "field_differences",
    "merge_schema",
    "table_reference",
]
