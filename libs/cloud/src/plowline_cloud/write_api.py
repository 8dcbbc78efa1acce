"""Append rows with the BigQuery Storage Write API (``load.mode: STORAGE_WRITE_API``).

``StreamWriter`` appends protobuf rows, built from the table schema, to one write stream
over one AppendRows connection per call. Its users: ``WriteApiRowSink`` (a COMMITTED
stream with offsets, ``write_api_committed``) and ``ExactlyOnceSink`` (PENDING streams).

Notes:
    The table is never the only judge (as ``BigQueryRowSink``): a row naming a field the
    table lacks is never sent; after one schema refresh it becomes ``UNKNOWN_FIELD``.
    The protobuf descriptor is cached per schema and rebuilt when the schema store's
    fields change. An append refused because the table's schema and the writer's differ
    (the mutator widened the table meanwhile) is retried after a refresh on a new
    connection, never dropped; when retries run out the call raises ``TransientError``
    (the caller does not ack, Pub/Sub redelivers). ``row_errors`` become ``INVALID``
    failures and the request's other rows are sent again (BigQuery rejects the whole
    request when one row is bad). Requests stay under 10 MB (the API's limit).
    An append whose response never came (the connection broke) may have been applied.
    With offsets (a ``StreamCursor``) it is sent again at the same offset and lands once
    (``write_api_offsets``). Without, a re-send can append it twice: ``write`` re-sends
    only with ``resend_unanswered=True``; exactly-once passes False, gets
    ``UnansweredAppend`` and writes the rows again on a fresh PENDING stream.
    The client's own retry is off: it would re-send a half-consumed request iterator.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import grpc
from google.api_core import exceptions as gexc
from google.auth.credentials import AnonymousCredentials, Credentials
from google.cloud import bigquery
from google.cloud.bigquery_storage_v1 import BigQueryWriteClient, types
from google.cloud.bigquery_storage_v1.services.big_query_write.transports.grpc import (
    BigQueryWriteGrpcTransport,
)
from plowline_core.errors import TransientError
from plowline_core.ports import InsertFailure, InsertReason, Row, TableSchemaStore
from plowline_core.schema.field import Field
from plowline_core.schema.widening import missing_fields

from plowline_cloud.clients import emulator_channel
from plowline_cloud.errors import is_transient, map_google_error
from plowline_cloud.write_api_offsets import NotApplied, StreamCursor, settle_by_offset
from plowline_cloud.write_api_proto import RowEncoder

MAX_REQUEST_BYTES = 9 * 1024 * 1024  # the API's limit is 10 MB; the descriptor and framing fit in 1
MAX_REQUEST_ROWS = 10_000
_ROW_FRAMING = 8
_SCHEMA_RACE_TEXT = ("schema", "no such field", "unknown field", "extra field")


def write_client(
    grpc_target: str | None = None, *, credentials: Credentials | None = None
) -> BigQueryWriteClient:
    """Return a Write client for Google, or for an emulator's gRPC port at ``host:port``."""
    if grpc_target:
        transport = BigQueryWriteGrpcTransport(channel=emulator_channel(grpc_target))
        return BigQueryWriteClient(transport=transport)  # type: ignore[no-untyped-call]  # gapic __init__ untyped
    return BigQueryWriteClient(credentials=credentials)  # type: ignore[no-untyped-call]  # as above


def anonymous() -> Credentials:
    """Return credentials for local stand-ins that check none."""
    return AnonymousCredentials()  # type: ignore[no-untyped-call]  # untyped in google-auth


def table_path(table: bigquery.TableReference) -> str:
    """Return ``projects/P/datasets/D/tables/T`` (the Storage API's name of a table)."""
    return f"projects/{table.project}/datasets/{table.dataset_id}/tables/{table.table_id}"


def check_fields(
    schema: TableSchemaStore, rows: Sequence[Row]
) -> tuple[list[Row], list[InsertFailure]]:
    """Split rows into those the table can take and ``UNKNOWN_FIELD`` failures (one refresh)."""
    fields = schema.fields()
    if not any(missing_fields(fields, row.data) for row in rows):
        return list(rows), []
    fields = schema.refresh()
    fitting: list[Row] = []
    failures: list[InsertFailure] = []
    for row in rows:
        missing = missing_fields(fields, row.data)
        if missing:
            message = f"no such field: {missing[0]}."
            failures.append(InsertFailure(row, InsertReason.UNKNOWN_FIELD, message, missing[0]))
        else:
            fitting.append(row)
    return fitting, failures


@dataclass(frozen=True, slots=True)
class _Encoded:
    row: Row
    payload: bytes


class UnansweredAppend(TransientError):
    """An append's response never came: its rows may or may not be on the stream."""


class _SchemaRace(Exception):
    """The backend's schema and the writer's differ: refresh, reconnect, send the rest again."""


class StreamWriter:
    """Append rows to one write stream at a time, with schema-driven protobuf rows."""

    def __init__(
        self,
        client: BigQueryWriteClient,
        schema_store: TableSchemaStore,
        *,
        max_request_bytes: int = MAX_REQUEST_BYTES,
        max_request_rows: int = MAX_REQUEST_ROWS,
        attempts: int = 5,
        timeout: float = 60.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._client = client
        self._schema = schema_store
        self._max_bytes = max_request_bytes
        self._max_rows = max_request_rows
        self._attempts = attempts
        self._timeout = timeout
        self._sleep = sleep
        self._encoder: RowEncoder | None = None
        self.bytes_sent = 0

    def encoder(self, fields: tuple[Field, ...]) -> RowEncoder:
        """Return the row encoder of ``fields`` (rebuilt only when the schema changed)."""
        cached = self._encoder
        if cached is None or (cached.fields is not fields and cached.fields != fields):
            cached = self._encoder = RowEncoder(fields)
        return cached

    def write(
        self,
        stream: str,
        rows: Sequence[Row],
        *,
        resend_unanswered: bool = True,
        cursor: StreamCursor | None = None,
    ) -> list[InsertFailure]:
        """Append the rows that fit the table to ``stream``; return the rejected ones.

        With a ``cursor`` (a COMMITTED stream only this writer appends to) every request
        carries its offset: one whose response was lost is sent again at the same offset,
        and lands once (``write_api_offsets``); the cursor moves past the rows appended.

        Raises:
            UnansweredAppend: without a cursor and with ``resend_unanswered=False``, an
                append got no response (the stream may hold its rows: do not commit it).
            StreamLost: with a cursor, the stream cannot take these appends any more.
            TransientError: appends kept failing (backend down, schema never settled).
            PermanentError: the stream or table is unusable (not found, permission).
        """
        pending, failures = check_fields(self._schema, rows)
        for attempt in range(self._attempts):
            if not pending:
                return failures
            encoder = self.encoder(self._schema.fields())
            encoded = self._encode(encoder, pending, failures)
            try:
                # Row errors go straight into ``failures``, so an exchange that also leaves
                # rows unsent still reports the rows it refused (they are never retried).
                self._settle_all(stream, encoder, self._requests(encoded), cursor, failures)
                return failures
            except _Unsent as unsent:
                if unsent.unanswered and not resend_unanswered:
                    raise UnansweredAppend(
                        f"append to {stream}: no response ({unsent.cause}); "
                        "its rows may be on the stream"
                    ) from unsent.cause
                pending = unsent.rows
                if isinstance(unsent.cause, _SchemaRace):
                    pending, more = check_fields(_Refreshed(self._schema), pending)
                    failures.extend(more)
                else:
                    self._sleep(min(0.2 * 2**attempt, 5.0))
                last = unsent.cause
        raise TransientError(f"append {len(pending)} rows to {stream}: {last}")

    def _encode(
        self, encoder: RowEncoder, rows: Sequence[Row], failures: list[InsertFailure]
    ) -> list[_Encoded]:
        encoded: list[_Encoded] = []
        for row in rows:
            try:
                payload = encoder.encode(row.data)
            except ValueError as exc:
                failures.append(InsertFailure(row, InsertReason.INVALID, str(exc)))
                continue
            if len(payload) + _ROW_FRAMING > self._max_bytes:
                message = f"row of {len(payload)} bytes exceeds {self._max_bytes}"
                failures.append(InsertFailure(row, InsertReason.TOO_LARGE, message))
                continue
            encoded.append(_Encoded(row, payload))
        return encoded

    def _requests(self, encoded: Sequence[_Encoded]) -> list[list[_Encoded]]:
        batches: list[list[_Encoded]] = []
        batch: list[_Encoded] = []
        size = 0
        for item in encoded:
            cost = len(item.payload) + _ROW_FRAMING
            if batch and (len(batch) >= self._max_rows or size + cost > self._max_bytes):
                batches.append(batch)
                batch, size = [], 0
            batch.append(item)
            size += cost
        if batch:
            batches.append(batch)
        return batches

    def _settle_all(
        self,
        stream: str,
        encoder: RowEncoder,
        batches: list[list[_Encoded]],
        cursor: StreamCursor | None,
        failures: list[InsertFailure],
    ) -> None:
        """Send every request on one AppendRows connection; settle each response.

        Notes:
            Every row a response refused is appended to ``failures`` before anything is
            raised: ``_Unsent`` carries only rows whose fate is still open, so a row is
            either in ``failures`` or sent again, never neither.
        """
        again: list[list[_Encoded]] = []
        unsent: list[Row] = []
        cause: Exception | None = None
        if cursor is None:
            outcomes, answered = self._exchange(stream, encoder, batches)
        else:
            exchange = functools.partial(self._exchange, stream, encoder)
            outcomes = settle_by_offset(cursor, batches, exchange, self._resend_pauses())
            answered = len(batches)
        for batch, outcome in zip(batches, outcomes, strict=True):
            if outcome is None:
                continue
            settled = _classify(outcome, batch)
            if isinstance(settled, _Split):
                failures.extend(settled.failures)
                again.extend(settled.again)
            else:
                unsent.extend(item.row for item in batch)
                cause = cause or settled
        if unsent:
            unsent.extend(item.row for batch in again for item in batch)
            cause = cause or TransientError("rows left unsent")
            raise _Unsent(unsent, cause, unanswered=answered < len(batches))
        if again:
            self._settle_all(stream, encoder, again, cursor, failures)

    def _resend_pauses(self) -> Iterator[None]:
        """Pause before each resend of unanswered appends, ``attempts`` times in all."""
        for attempt in range(self._attempts):
            self._sleep(min(0.2 * 2**attempt, 5.0))
            yield None

    def _exchange(
        self,
        stream: str,
        encoder: RowEncoder,
        batches: Sequence[Sequence[_Encoded]],
        offsets: Sequence[int] | None = None,
    ) -> tuple[list[Exception | None], int]:
        """Return, per request, None when appended or the error that refused it; and how
        many requests were answered (the rest got no response: their fate is unknown)."""
        at: Sequence[int | None] = offsets or [None] * len(batches)
        requests = (
            self._request(stream, encoder, batch, first=index == 0, offset=at[index])
            for index, batch in enumerate(batches)
        )
        outcomes: list[Exception | None] = []
        ended: Exception | None = None
        try:
            # No retry: the default one calls again with the half-consumed request iterator
            # (the rest goes out on a connection whose first request names no stream).
            responses = self._client.append_rows(
                requests, retry=None, timeout=self._timeout, metadata=_routing(stream)
            )
            for response in responses:
                outcomes.append(_response_error(response))
        except gexc.GoogleAPICallError as exc:
            ended = exc
        answered = len(outcomes)
        missing = len(batches) - answered
        return outcomes + [ended or TransientError("connection closed early")] * missing, answered

    def _request(
        self,
        stream: str,
        encoder: RowEncoder,
        batch: Sequence[_Encoded],
        *,
        first: bool,
        offset: int | None,
    ) -> types.AppendRowsRequest:
        payloads = [item.payload for item in batch]
        self.bytes_sent += sum(len(p) + _ROW_FRAMING for p in payloads)
        data = types.AppendRowsRequest.ProtoData(rows=types.ProtoRows(serialized_rows=payloads))
        fields: dict[str, Any] = {"proto_rows": data}
        if offset is not None:
            fields["offset"] = offset
        if first:
            # Like the official writer: only a connection's first request names the stream.
            data.writer_schema = types.ProtoSchema(proto_descriptor=encoder.descriptor)
            self.bytes_sent += encoder.descriptor.ByteSize()
            fields["write_stream"] = stream
        return types.AppendRowsRequest(**fields)


def _routing(stream: str) -> tuple[tuple[str, str], ...]:
    # BigQuery routes AppendRows by this header (the official writer sends it too).
    return (("x-goog-request-params", f"write_stream={stream}"),)


def _response_error(response: types.AppendRowsResponse) -> Exception | None:
    if not response.error.code and not response.row_errors:
        return None
    code = response.error.code or 3  # row errors without a status: INVALID_ARGUMENT
    error: Exception = gexc.from_grpc_status(  # type: ignore[no-untyped-call]  # api_core untyped
        grpc.StatusCode(_STATUS_BY_NUMBER[code]), response.error.message, response=response
    )
    return error


_STATUS_BY_NUMBER = {status.value[0]: status.value for status in grpc.StatusCode}


class _Unsent(Exception):
    def __init__(self, rows: list[Row], cause: Exception, *, unanswered: bool) -> None:
        super().__init__(str(cause))
        self.rows = rows
        self.cause = cause
        self.unanswered = unanswered  # some request got no response: it may have landed


class _Refreshed:
    """A schema store view whose ``fields()`` always re-reads (after a schema race)."""

    def __init__(self, store: TableSchemaStore) -> None:
        self._store = store

    def fields(self) -> tuple[Field, ...]:
        return self._store.refresh()

    def refresh(self) -> tuple[Field, ...]:
        return self._store.refresh()

    def add_fields(self, fields: Sequence[Field]) -> tuple[Field, ...]:
        return self._store.add_fields(fields)


@dataclass(frozen=True, slots=True)
class _Split:
    """Rows a response rejected, and requests to send again without them."""

    failures: list[InsertFailure]
    again: list[list[_Encoded]]


def _classify(exc: Exception, batch: Sequence[_Encoded]) -> _Split | Exception:
    """Return the rows' fate for row errors, else the error that left the batch unsent."""
    if isinstance(exc, NotApplied):
        return _Split([], [list(batch)])  # behind a refused request: send again, new offset
    response = getattr(exc, "response", None)
    row_errors = list(getattr(response, "row_errors", None) or ())
    if row_errors:
        bad = {int(error.index): str(error.message) for error in row_errors}
        failures = [
            InsertFailure(item.row, InsertReason.INVALID, bad[i])
            for i, item in enumerate(batch)
            if i in bad
        ]
        rest = [item for i, item in enumerate(batch) if i not in bad]
        return _Split(failures, [rest] if rest else [])
    text = str(exc).lower()
    if isinstance(exc, gexc.InvalidArgument | gexc.NotFound) and any(
        word in text for word in _SCHEMA_RACE_TEXT
    ):
        return _SchemaRace(str(exc))
    if isinstance(exc, gexc.InvalidArgument) and len(batch) == 1:
        return _Split([InsertFailure(batch[0].row, InsertReason.INVALID, exc.message)], [])
    if isinstance(exc, gexc.InvalidArgument):
        # The request was refused as a whole: send its rows one by one to find the bad ones.
        return _Split([], [[item] for item in batch])
    if is_transient(exc) or not isinstance(exc, gexc.GoogleAPICallError):
        return TransientError(str(exc))
    raise map_google_error(exc, "append rows") from exc
