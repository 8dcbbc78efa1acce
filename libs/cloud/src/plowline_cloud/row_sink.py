"""Insert rows into BigQuery with insertAll, checking each row against the schema first.

Notes:
    The table is never the only judge: a row naming a field the table lacks is never
    sent (bqemulator drops unknown fields silently; BigQuery rejects them). The schema
    is refreshed once per call when such a row shows up, then the row becomes an
    ``UNKNOWN_FIELD`` failure with BigQuery's words (``no such field: X.``).
    Requests hold at most 500 rows and 10 MB; ``insertId`` is the row's ``insert_id``.
    Rows BigQuery reports ``stopped`` (another row of the request failed) are sent again
    without the failed rows; a request rejected as a whole is split into single rows.
    Encoding (CPU per row): each row is encoded once, by orjson, and the request body is
    joined from those bytes and sent through the client's ``_call_api`` (its retry, span
    and timeout header), the way ``insert_rows_json`` sends it: that method would encode
    the whole body again with the json module, a fifth of the loader's Python CPU. What
    orjson refuses (an integer beyond 64 bits, a lone surrogate) is encoded by the json
    module as before; NaN and Infinity become null (invalid JSON before: the request was
    refused and the row failed as ``invalid``). A call whose rows fit one request (the
    loader's 500-row chunks) encodes its body in one ``orjson.dumps`` instead
    (``whole_request_body``: the same bytes, one copy of each row instead of five); rows
    are encoded one by one only to be split into requests, or when orjson refuses one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import orjson
from google.api_core import exceptions as gexc
from google.cloud import bigquery
from google.cloud.bigquery.retry import DEFAULT_RETRY
from plowline_core.ports import InsertFailure, InsertReason, Row, TableSchemaStore
from plowline_core.schema.widening import missing_fields, with_missing_fields

from plowline_cloud.errors import translated
from plowline_cloud.table_schema import table_reference

MAX_ROWS_PER_REQUEST = 500
MAX_REQUEST_BYTES = 10 * 1024 * 1024
_ROW_OVERHEAD = 64  # {"insertId": …, "json": …} around each row
_RETRY_ALONE = frozenset({"stopped", "backenderror", "timeout", "internalerror"})


def encoded_entry(row: Row) -> bytes:
    """Return the row as one entry of an insertAll request's ``rows``: insertId and json.

    Raises:
        TypeError: a value JSON has no type for (as ``insert_rows_json`` raised).
    """
    document = row.data if type(row.data) is dict else dict(row.data)
    try:
        insert_id, data = orjson.dumps(row.insert_id), orjson.dumps(document)
    except TypeError:  # ints beyond 64 bits, lone surrogates: the json module writes them
        insert_id = json.dumps(row.insert_id).encode()
        data = json.dumps(document, separators=(",", ":")).encode()
    return b'{"insertId":' + insert_id + b',"json":' + data + b"}"


def encoded_size(row: Row) -> int:
    """Return the bytes a row takes in an insertAll request body."""
    try:
        return len(encoded_entry(row))
    except TypeError:  # values JSON has no type for: an estimate
        text = json.dumps(row.data, separators=(",", ":"), default=str, ensure_ascii=False)
        return len(text.encode()) + len(row.insert_id.encode()) + _ROW_OVERHEAD


def request_body(entries: Sequence[bytes]) -> bytes:
    """Return the insertAll request body of encoded entries (``encoded_entry``)."""
    return b'{"rows":[' + b",".join(entries) + _BODY_END


_BODY_END = b'],"skipInvalidRows":false,"ignoreUnknownValues":false}'
_Entry = tuple[Row, bytes]  # a row and its encoded entry


def whole_request_body(rows: Sequence[Row], max_bytes: int) -> bytes | None:
    """Return ``request_body`` of all the rows, in one pass, or None when it cannot be one.

    Notes:
        The same bytes as ``request_body`` of each row's ``encoded_entry`` (key order,
        orjson's writing of every value). None when a row's data is not a plain dict (it
        is copied to one first), orjson refuses a value (the json module writes those), or
        the body is over ``max_bytes``: the caller then encodes row by row.
    """
    if any(type(row.data) is not dict for row in rows):
        return None
    request = {
        "rows": [{"insertId": row.insert_id, "json": row.data} for row in rows],
        "skipInvalidRows": False,
        "ignoreUnknownValues": False,
    }
    try:
        body = orjson.dumps(request)
    except TypeError:  # orjson.JSONEncodeError is one
        return None
    return body if len(body) <= max_bytes else None


class BigQueryRowSink:
    """Stream rows into one BigQuery table with insertAll (satisfies ``RowSink``)."""

    def __init__(
        self,
        client: bigquery.Client,
        table_ref: str | bigquery.TableReference,
        schema_store: TableSchemaStore,
        *,
        timeout: float = 30.0,
        retry_deadline: float = 60.0,
        max_rows: int = MAX_ROWS_PER_REQUEST,
        max_bytes: int = MAX_REQUEST_BYTES,
    ) -> None:
        self._client = client
        self._table = table_reference(client, table_ref)
        self._schema = schema_store
        self._timeout = timeout
        self._retry = DEFAULT_RETRY.with_deadline(retry_deadline)
        self._max_rows = max_rows
        self._max_bytes = max_bytes

    def insert(self, rows: Sequence[Row]) -> list[InsertFailure]:
        """Insert rows; return the rejected ones (raise TransientError when BigQuery is failing)."""
        fitting, failures = self._check_fields(rows)
        if 0 < len(fitting) <= self._max_rows:
            # Over max_bytes (rows of 20 kB on average) this pass is wasted: rare.
            whole = whole_request_body(fitting, self._max_bytes)
            if whole is not None:
                failures.extend(self._send(fitting, retry_stopped=True, body=whole))
                return failures
        entries: list[_Entry] = []
        for row in fitting:
            entry = encoded_entry(row)
            if len(entry) + 1 > self._max_bytes:  # the comma or bracket before it
                failures.append(
                    InsertFailure(
                        row,
                        InsertReason.TOO_LARGE,
                        f"row of {len(entry)} bytes exceeds {self._max_bytes}",
                    )
                )
            else:
                entries.append((row, entry))
        for batch in self._batches(entries):
            body = request_body([entry for _, entry in batch])
            failures.extend(self._send([row for row, _ in batch], retry_stopped=True, body=body))
        return failures

    def _check_fields(self, rows: Sequence[Row]) -> tuple[list[Row], list[InsertFailure]]:
        fields = self._schema.fields()
        positions = with_missing_fields(fields, [row.data for row in rows])
        if not positions:
            return list(rows), []
        suspects = [rows[n] for n in positions]
        fields = self._schema.refresh()
        failures: list[InsertFailure] = []
        rejected: set[int] = set()
        for row in suspects:
            missing = missing_fields(fields, row.data)
            if missing:
                rejected.add(id(row))
                failures.append(
                    InsertFailure(
                        row, InsertReason.UNKNOWN_FIELD, f"no such field: {missing[0]}.", missing[0]
                    )
                )
        return [row for row in rows if id(row) not in rejected], failures

    def _batches(self, entries: Sequence[_Entry]) -> Iterator[list[_Entry]]:
        batch: list[_Entry] = []
        total = len(_BODY_END) + 9  # {"rows":[ and the end
        empty = total
        for row, entry in entries:
            size = len(entry) + 1
            if batch and (len(batch) >= self._max_rows or total + size > self._max_bytes):
                yield batch
                batch, total = [], empty
            batch.append((row, entry))
            total += size
        if batch:
            yield batch

    def _send(
        self, batch: Sequence[Row], retry_stopped: bool, body: bytes | None = None
    ) -> list[InsertFailure]:
        """Send one request of ``batch`` (``body``, or encoded here) and settle its errors."""
        if body is None:  # rows sent again (rare): encode them anew
            body = request_body([encoded_entry(row) for row in batch])
        try:
            errors = self._insert_all(body, len(batch))
        except _Rejected as rejected:
            if len(batch) > 1:
                return [failure for one in batch for failure in self._send([one], retry_stopped)]
            return [_request_failure(batch[0], rejected.cause)]
        return self._settle(batch, errors, retry_stopped)

    def _settle(
        self, batch: Sequence[Row], errors: Sequence[Mapping[str, Any]], retry_stopped: bool
    ) -> list[InsertFailure]:
        failures: list[InsertFailure] = []
        again: list[Row] = []
        for error in errors:
            row = batch[int(error["index"])]
            first = (error.get("errors") or [{}])[0]
            if retry_stopped and str(first.get("reason") or "").lower() in _RETRY_ALONE:
                again.append(row)
            else:
                failures.append(_row_failure(row, first))
        if again:
            # Sent again without the rows that failed; a second stop is reported as is.
            failures.extend(self._send(again, retry_stopped=False))
        return failures

    def _insert_all(self, body: bytes, rows: int) -> Sequence[Mapping[str, Any]]:
        """Send one insertAll request; return its per-row errors (``insert_rows_json``'s)."""
        path = f"{self._table.path}/insertAll"
        with translated(f"insert {rows} rows into {self._table.table_id}"):
            try:
                response = self._client._call_api(
                    self._retry,
                    span_name="BigQuery.insertRowsJson",
                    span_attributes={"path": path},
                    method="POST",
                    path=path,
                    data=body,
                    content_type="application/json",
                    timeout=self._timeout,
                )
            except gexc.GoogleAPICallError as exc:
                if _rejects_request(exc):
                    raise _Rejected(exc) from exc
                raise
        return [
            {"index": int(error["index"]), "errors": error["errors"]}
            for error in response.get("insertErrors", ())
        ]


class _Rejected(Exception):
    """A whole insertAll request was refused as invalid (carried past ``translated``)."""

    def __init__(self, cause: gexc.GoogleAPICallError) -> None:
        super().__init__(str(cause))
        self.cause = cause


def _rejects_request(exc: BaseException) -> bool:
    return isinstance(exc, gexc.BadRequest) or getattr(exc, "code", None) == 413


def _request_failure(row: Row, exc: BaseException) -> InsertFailure:
    too_large = getattr(exc, "code", None) == 413 or "too large" in str(exc).lower()
    reason = InsertReason.TOO_LARGE if too_large else InsertReason.INVALID
    return InsertFailure(row, reason, getattr(exc, "message", None) or str(exc))


def _row_failure(row: Row, error: Mapping[str, Any]) -> InsertFailure:
    message = str(error.get("message") or error.get("reason") or "rejected")
    location = error.get("location") or None
    reason_text = str(error.get("reason") or "").lower()
    if "no such field" in message.lower():
        reason = InsertReason.UNKNOWN_FIELD
    elif reason_text == "stopped":
        reason = InsertReason.STOPPED
    elif "too large" in message.lower() or reason_text == "toolarge":
        reason = InsertReason.TOO_LARGE
    else:
        reason = InsertReason.INVALID
    return InsertFailure(row, reason, message, str(location) if location else None)
