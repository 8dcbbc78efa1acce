"""The Storage Write API faults of the catalogue (:mod:`plowline_devstack.faults`), on AppendRows.

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
  (:func:`.faults.record_widening`, on a successful tables.patch/update).

Both are ``patch`` installs on :mod:`bqemulator.grpc_api.write_servicer`, made on top of
the corrections (:mod:`.write_streams`) and only when a plan turns one on.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import bqemulator.grpc_api.write_servicer as servicer
import grpc

from plowline_devstack.bigquery.faults import (
    PROPAGATION_DELAY,
    STREAM_BROKEN,
    current,
    not_yet_propagated,
)

UNAVAILABLE_MESSAGE = "The service is currently unavailable."

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
                raise ValueError(
                    "Input schema has more fields than BigQuery schema, extra fields: "
                    + ", ".join(f"'{name}'" for name in extra)
                )
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


def install() -> None:
    """Install the Write API faults the configured plan turns on (none: nothing changes)."""
    names = current().names
    if PROPAGATION_DELAY in names:
        install_propagation_delay()
    if STREAM_BROKEN in names:
        install_stream_broken()
