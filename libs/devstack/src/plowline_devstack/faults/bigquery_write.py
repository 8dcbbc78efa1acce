"""The Storage Write API faults of the catalogue (:mod:`.catalogue`), on AppendRows.

* ``append-stream-broken-after-apply``: an AppendRows request is applied (its rows are in
  the stream, visible at once on ``_default``/COMMITTED, at commit on PENDING), then the
  stream fails with UNAVAILABLE instead of the response. The writer cannot tell whether
  the append happened: a re-send without an offset appends the rows a second time, one
  with the offset it meant gets ALREADY_EXISTS.
* ``schema-propagation-delay``: BigQuery's Write API learns of columns added by
  tables.patch/update "in order of minutes". For ``seconds`` after a table was widened,
  an append whose writer schema names one of the new columns is refused with
  INVALID_ARGUMENT "Input schema has more fields than BigQuery schema" (in the response's
  ``error``, the connection stays open, as the ``write-schema-refresh`` correction answers
  fields the table lacks). Widenings are recorded by the REST side
  (:func:`.bigquery_rest.record_widening`, on a successful tables.patch/update).
* ``append-row-errors-then-internal``: an append is refused with row errors for its first
  row (BigQuery's answer to a bad row: the whole request refused, ``row_errors`` naming
  it, nothing appended); the next append on the same stream (in the same exchange, or
  the resend of the other rows) gets an in-band INTERNAL, nothing appended.
* ``commit-invalid-stream-state``: after ``after`` commits answered normally, up to
  ``times`` BatchCommitWriteStreams calls are answered INVALID_STREAM_STATE for each of
  their streams, nothing committed; those streams answer so to every later commit.

All are ``patch`` installs on :mod:`bqemulator.grpc_api.write_servicer`, made on top of
the corrections (:mod:`plowline_devstack.bigquery.write_streams`) and only when a plan turns one on.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import bqemulator.grpc_api.write_servicer as servicer
import grpc

from plowline_devstack.bigquery.write_streams import more_fields_than_table
from plowline_devstack.faults.bigquery_rest import (
    COMMIT_INVALID_STATE,
    PROPAGATION_DELAY,
    ROW_ERRORS_THEN_INTERNAL,
    STREAM_BROKEN,
    current,
    not_yet_propagated,
)

UNAVAILABLE_MESSAGE = "The service is currently unavailable."
INTERNAL_MESSAGE = "An internal error occurred. Retry the request."
ROW_ERROR_MESSAGE = "The row could not be processed (a fault of the local stack)."
INVALID_STATE_MESSAGE = "The stream is in an invalid state and cannot be committed."

_Handler = servicer.BigQueryWriteHandler
_bound = threading.local()
"""The table of the stream this gRPC worker thread is appending to (``table``)."""


def install_propagation_delay() -> None:
    """Refuse appends naming columns added less than ``seconds`` ago."""
    shipped_bound = _Handler._ensure_stream_bound
    shipped_rows = servicer._rows_for_request

    def ensure_stream_bound(
        self: Any, stream_name: str, bound_ctx: Any, context: grpc.ServicerContext
    ) -> Any:
        bound = shipped_bound(self, stream_name, bound_ctx, context)
        if bound is not None:
            stream = bound[0]
            _bound.table = (stream.project_id, stream.dataset_id, stream.table_id)
        return bound

    def rows_for_request(
        request: Any, decoder: Any, arrow_schema_bytes: Any, target_schema: Any
    ) -> Any:
        result = shipped_rows(request, decoder, arrow_schema_bytes, target_schema)
        writer = result[1]
        table = getattr(_bound, "table", None)
        if writer is not None and table is not None:
            extra = not_yet_propagated(table, list(writer.field_names))
            if extra:
                raise more_fields_than_table(extra)
        return result

    _Handler._ensure_stream_bound = ensure_stream_bound  # type: ignore[method-assign]  # the seam
    servicer._rows_for_request = rows_for_request  # type: ignore[assignment]  # same call shape


def _applied(response: bytes) -> bool:
    from google.cloud.bigquery_storage_v1 import types

    message = types.AppendRowsResponse.pb().FromString(response)
    return bool(message.WhichOneof("response") == "append_result")


def install_stream_broken() -> None:
    """Break the AppendRows stream with UNAVAILABLE after an applied append, at a rate."""
    shipped = _Handler._handle_append_rows

    def handle_append_rows(
        self: Any, request_iterator: Iterator[bytes], context: grpc.ServicerContext
    ) -> Iterator[bytes]:
        for response in shipped(self, request_iterator, context):
            if _applied(response) and current().draw(STREAM_BROKEN):
                # The servicer runs on grpc.aio: a sync handler ends the call by setting
                # the status and returning (``abort`` is a coroutine there).
                context.set_code(grpc.StatusCode.UNAVAILABLE)
                context.set_details(UNAVAILABLE_MESSAGE)
                return
            yield response

    _Handler._handle_append_rows = handle_append_rows  # type: ignore[method-assign]  # the seam


def install_row_errors_then_internal() -> None:
    """Refuse an append with row errors, then the stream's next append with INTERNAL."""
    from google.cloud.bigquery_storage_v1 import types

    shipped = _Handler._perform_append
    owed: set[str] = set()  # streams whose next append is answered INTERNAL
    lock = threading.Lock()

    def perform_append(
        self: Any, stream: Any, rows: Any, offset: Any, max_buffered_rows: int
    ) -> bytes:
        with lock:
            if stream.name in owed:
                owed.discard(stream.name)
                answer = types.AppendRowsResponse(
                    write_stream=stream.name, error={"code": 13, "message": INTERNAL_MESSAGE}
                )
                return bytes(types.AppendRowsResponse.serialize(answer))
            struck = rows.num_rows > 0 and current().draw(ROW_ERRORS_THEN_INTERNAL)
            if struck:
                owed.add(stream.name)
        if not struck:
            return bytes(shipped(self, stream, rows, offset, max_buffered_rows))
        bad = types.RowError(
            index=0, code=types.RowError.RowErrorCode.FIELDS_ERROR, message=ROW_ERROR_MESSAGE
        )
        answer = types.AppendRowsResponse(
            write_stream=stream.name,
            row_errors=[bad],
            error={"code": 3, "message": "Errors found while processing rows."},
        )
        return bytes(types.AppendRowsResponse.serialize(answer))

    _Handler._perform_append = perform_append  # type: ignore[method-assign,assignment]  # the seam


def install_commit_invalid_state() -> None:
    """Answer INVALID_STREAM_STATE to commits (``after``, ``times``), for ever per stream."""
    from google.cloud.bigquery_storage_v1 import types

    shipped = _Handler._handle_batch_commit_write_streams
    params = current().plan.get(COMMIT_INVALID_STATE, {})
    after, times = int(params.get("after", 0)), int(params.get("times", 0))
    spoiled: set[str] = set()
    counts = {"calls": 0, "refused": 0}
    lock = threading.Lock()

    def batch_commit(self: Any, request_bytes: bytes, context: grpc.ServicerContext) -> bytes:
        request = types.BatchCommitWriteStreamsRequest.deserialize(request_bytes)
        names = list(request.write_streams)
        with lock:
            counts["calls"] += 1
            strikes = (
                counts["calls"] > after
                and (not times or counts["refused"] < times)
                and current().draw(COMMIT_INVALID_STATE)
            )
            if strikes:
                counts["refused"] += 1
                spoiled.update(names)
            refused = strikes or bool(spoiled & set(names))
        if not refused:
            return bytes(shipped(self, request_bytes, context))
        code = types.StorageError.StorageErrorCode.INVALID_STREAM_STATE
        errors = [
            types.StorageError(code=code, entity=name, error_message=INVALID_STATE_MESSAGE)
            for name in names
        ]
        answer = types.BatchCommitWriteStreamsResponse(stream_errors=errors)
        return bytes(types.BatchCommitWriteStreamsResponse.serialize(answer))

    _Handler._handle_batch_commit_write_streams = batch_commit  # type: ignore[method-assign]  # the seam


def install() -> None:
    """Install the Write API faults the configured plan turns on (none: nothing changes)."""
    names = current().names
    if PROPAGATION_DELAY in names:
        install_propagation_delay()
    if STREAM_BROKEN in names:
        install_stream_broken()
    if ROW_ERRORS_THEN_INTERNAL in names:
        install_row_errors_then_internal()
    if COMMIT_INVALID_STATE in names:
        install_commit_invalid_state()
