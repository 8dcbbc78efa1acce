"""Corrections: the Storage Write API (gRPC) behaves like BigQuery's on plowline's paths.

Each correction below states the real behaviour and bqemulator 1.4.0's; all are
``patch`` corrections on :mod:`bqemulator.grpc_api.write_servicer` (the gRPC service has
no REST route to intercept). Each wraps one seam and calls the shipped code, so they
compose in any order and any of them can be left out.

* ``write-api-records``: real BigQuery appends rows to tables with RECORD (and REPEATED
  RECORD) columns; the emulator builds the connection's target schema without the
  RECORDs' sub-fields and fails with ``STRUCT with no fields`` on the first append.
* ``write-stream-continuation``: on one AppendRows connection only the first request
  must name ``write_stream`` (the official writer sends it once); the emulator reads the
  empty name of the second request as another stream and answers ``404 Stream not found``.
* ``write-schema-refresh``: real BigQuery applies a widened table schema to appends and
  to rows of PENDING streams committed later (new columns NULL), and refuses a writer
  schema with fields the table lacks (``INVALID_ARGUMENT``, ``Input schema has more
  fields than BigQuery schema``). The emulator keeps the schema a connection first saw:
  after a widening its positional ``INSERT`` fails (column count) and rows are lost from
  PENDING streams, while fields unknown to the table are silently dropped. Each append
  reads the schema and inserts under :data:`.storage_lock.WIDENING`, which a widening
  holds too (:mod:`.storage_lock`).
* ``batch-commit-parent``: BatchCommitWriteStreams commits streams of the one ``parent``
  table it names; the emulator ignores ``parent`` and commits streams of any table. The
  corrected emulator refuses with ``INVALID_ARGUMENT`` (real BigQuery refuses too; the
  exact wording of its message is not reproduced).
* ``write-api-connection``: real BigQuery serves queries, tables.get and Write API
  appends on one table concurrently. The emulator runs every append (INSERT from a
  registered Arrow table, then a snapshot ``CREATE TABLE … AS SELECT``) on a gRPC worker
  thread through the same ``DuckDBPyConnection`` the REST event loop queries with, guarded
  only by a lock the REST side never takes. A DuckDB connection is not thread-safe: a
  query polled while appends run fails with ``Attempting to execute an unsuccessful or
  closed pending query result`` (its pending result closed by the other thread), and the
  interleaving can stall the event loop so every REST call (tables.get) times out. The
  corrected emulator runs each append thread's SQL on its own cursor of the database
  (DuckDB's one-connection-per-thread rule); appends stay serialised by the servicer lock.
"""

from __future__ import annotations

import threading
from typing import Any

import bqemulator.grpc_api.write_servicer as servicer
import grpc
from bqemulator.storage.engine import DuckDBEngine

from plowline_devstack.bigquery.interception import Correction
from plowline_devstack.bigquery.storage_lock import WIDENING

_Handler = servicer.BigQueryWriteHandler


def _schema_fields(table_meta: Any) -> list[dict[str, Any]]:
    """Return the table's schema as REST fields, RECORD sub-fields included."""

    def raw(field: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"name": field.name, "type": field.type, "mode": field.mode}
        if field.fields:
            out["fields"] = [raw(sub) for sub in field.fields]
        return out

    return [raw(field) for field in table_meta.schema_.fields]


def _arrow_schema_with_records(table_meta: Any) -> Any:
    from bqemulator.api.routes.tabledata import _build_arrow_schema

    return _build_arrow_schema(_schema_fields(table_meta))


def install_records() -> None:
    """Build AppendRows target schemas with RECORD sub-fields."""
    servicer._table_arrow_schema = _arrow_schema_with_records


def install_continuation() -> None:
    """Keep a connection bound to its stream when later requests leave ``write_stream`` empty."""
    shipped = _Handler._ensure_stream_bound

    def ensure_stream_bound(
        self: Any, stream_name: str, bound_ctx: Any, context: grpc.ServicerContext
    ) -> Any:
        if not stream_name and bound_ctx is not None:
            stream_name = bound_ctx[0].name
        return shipped(self, stream_name, bound_ctx, context)

    _Handler._ensure_stream_bound = ensure_stream_bound  # type: ignore[method-assign]  # the seam


def _current_schema(handler: Any, stream: Any) -> Any | None:
    meta = handler._ctx.catalog.get_table(stream.project_id, stream.dataset_id, stream.table_id)
    return None if meta is None else servicer._table_arrow_schema(meta)


def install_schema_refresh() -> None:
    """Re-read the table schema per append, align rows at flush, refuse unknown fields."""
    shipped_bound = _Handler._ensure_stream_bound
    shipped_flush = _Handler._flush_to_target
    shipped_rows = servicer._rows_for_request

    def ensure_stream_bound(
        self: Any, stream_name: str, bound_ctx: Any, context: grpc.ServicerContext
    ) -> Any:
        bound = shipped_bound(self, stream_name, bound_ctx, context)
        if bound is None:
            return None
        current = _current_schema(self, bound[0])
        return bound if current is None or current.equals(bound[1]) else (bound[0], current)

    def flush_to_target(self: Any, stream: Any, rows: Any) -> None:
        with WIDENING:  # the schema read and the INSERT see one state of a widening table
            current = _current_schema(self, stream)
            if current is not None and not current.equals(rows.schema):
                rows = servicer._align_to_target(rows, current)
            shipped_flush(self, stream, rows)

    def rows_for_request(
        request: Any, decoder: Any, arrow_schema_bytes: Any, target_schema: Any
    ) -> Any:
        result = shipped_rows(request, decoder, arrow_schema_bytes, target_schema)
        writer = result[1]
        if writer is not None:
            known = {name.lower() for name in target_schema.names}
            extra = [name for name in writer.field_names if name.lower() not in known]
            if extra:
                raise more_fields_than_table(extra)
        return result

    _Handler._ensure_stream_bound = ensure_stream_bound  # type: ignore[method-assign]  # the seam
    _Handler._flush_to_target = flush_to_target  # type: ignore[method-assign]  # the seam
    servicer._rows_for_request = rows_for_request  # type: ignore[assignment]  # same call shape


def install_commit_parent() -> None:
    """Refuse BatchCommitWriteStreams for streams outside the ``parent`` table."""
    shipped = _Handler._handle_batch_commit_write_streams

    def batch_commit(self: Any, request_bytes: bytes, context: grpc.ServicerContext) -> bytes:
        from google.cloud.bigquery_storage_v1 import types

        request = types.BatchCommitWriteStreamsRequest.deserialize(request_bytes)
        prefix = f"{request.parent}/streams/"
        strangers = [name for name in request.write_streams if not name.startswith(prefix)]
        if strangers:
            context.set_code(grpc.StatusCode.INVALID_ARGUMENT)
            context.set_details(
                f"Stream {strangers[0]} does not belong to the parent table {request.parent}"
            )
            return b""
        return bytes(shipped(self, request_bytes, context))

    _Handler._handle_batch_commit_write_streams = batch_commit  # type: ignore[method-assign]  # the seam


_thread_connection = threading.local()
"""This thread's DuckDB cursor while it runs an append (``cursor``), else unset."""


def install_own_connection() -> None:
    """Run each append's SQL on a cursor owned by the appending thread."""
    shipped_flush = _Handler._flush_to_target
    shipped_connection = DuckDBEngine.connection

    def connection(self: DuckDBEngine) -> Any:
        own = getattr(_thread_connection, "cursor", None)
        return shipped_connection.fget(self) if own is None else own  # type: ignore[attr-defined]  # a property

    def flush_to_target(self: Any, stream: Any, rows: Any) -> None:
        cursors: dict[int, Any] = getattr(_thread_connection, "cursors", {})
        _thread_connection.cursors = cursors
        engine = self._ctx.engine
        cursor = cursors.get(id(engine))
        if cursor is None:  # one per thread and engine: a cursor is a connection of its own
            cursor = cursors[id(engine)] = shipped_connection.fget(engine).cursor()  # type: ignore[attr-defined]  # a property
        _thread_connection.cursor = cursor
        try:
            shipped_flush(self, stream, rows)
        finally:
            _thread_connection.cursor = None

    DuckDBEngine.connection = property(connection)  # type: ignore[method-assign,assignment]  # the seam
    _Handler._flush_to_target = flush_to_target  # type: ignore[method-assign]  # the seam


WRITE_API_RECORDS = Correction(
    name="write-api-records",
    summary="Storage Write API appends to tables with RECORD columns",
    patch=install_records,
)
WRITE_STREAM_CONTINUATION = Correction(
    name="write-stream-continuation",
    summary="AppendRows requests after the first may omit write_stream",
    patch=install_continuation,
)
WRITE_SCHEMA_REFRESH = Correction(
    name="write-schema-refresh",
    summary="Write API appends and PENDING commits follow a widened table schema",
    patch=install_schema_refresh,
)
BATCH_COMMIT_PARENT = Correction(
    name="batch-commit-parent",
    summary="BatchCommitWriteStreams commits only streams of its parent table",
    patch=install_commit_parent,
)
WRITE_API_CONNECTION = Correction(
    name="write-api-connection",
    summary="Write API appends use their own DuckDB cursor, not the REST event loop's connection",
    patch=install_own_connection,
)
WRITE_API_CORRECTIONS = (
    WRITE_API_RECORDS,
    WRITE_STREAM_CONTINUATION,
    WRITE_SCHEMA_REFRESH,
    BATCH_COMMIT_PARENT,
    WRITE_API_CONNECTION,
)


def more_fields_than_table(extra: list[str]) -> ValueError:
    """Return the Write API's refusal of a writer schema naming ``extra`` fields the table lacks."""
    return ValueError(
        "Input schema has more fields than BigQuery schema, extra fields: "
        + ", ".join(f"'{name}'" for name in extra)
    )
