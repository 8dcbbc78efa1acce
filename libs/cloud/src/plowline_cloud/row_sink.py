"""Insert rows into BigQuery with insertAll, checking each row against the schema first.

Notes:
    The table is never the only judge: a row naming a field the table lacks is never
    sent (bqemulator drops unknown fields silently; BigQuery rejects them). The schema
    is refreshed once per call when such a row shows up, then the row becomes an
    ``UNKNOWN_FIELD`` failure with BigQuery's words (``no such field: X.``).
    Requests hold at most 500 rows and 10 MB; ``insertId`` is the row's ``insert_id``.
    Rows BigQuery reports ``stopped`` (another row of the request failed) are sent again
    without the failed rows; a request rejected as a whole is split into single rows.
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
from plowline_core.schema.widening import missing_fields

from plowline_cloud.errors import translated
from plowline_cloud.table_schema import table_reference

MAX_ROWS_PER_REQUEST = 500
MAX_REQUEST_BYTES = 10 * 1024 * 1024
_ROW_OVERHEAD = 64  # {"insertId": …, "json": …} around each row
_RETRY_ALONE = frozenset({"stopped", "backenderror", "timeout", "internalerror"})


def encoded_size(row: Row) -> int:
    """Return the bytes a row takes in an insertAll request body (close estimate)."""
    try:
        size = len(orjson.dumps(row.data))
    except TypeError:  # ints beyond 64 bits, or values JSON has no type for
        size = len(
            json.dumps(row.data, separators=(",", ":"), default=str, ensure_ascii=False).encode()
        )
    return size + len(row.insert_id.encode()) + _ROW_OVERHEAD


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
        sized: list[tuple[Row, int]] = []
        for row in fitting:
            size = encoded_size(row)
            if size > self._max_bytes:
                failures.append(
                    InsertFailure(
                        row,
                        InsertReason.TOO_LARGE,
                        f"row of {size} bytes exceeds {self._max_bytes}",
                    )
                )
            else:
                sized.append((row, size))
        for batch in self._batches(sized):
            failures.extend(self._send(batch, retry_stopped=True))
        return failures

    def _check_fields(self, rows: Sequence[Row]) -> tuple[list[Row], list[InsertFailure]]:
        fields = self._schema.fields()
        suspects = [row for row in rows if missing_fields(fields, row.data)]
        if not suspects:
            return list(rows), []
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

    def _batches(self, sized: Sequence[tuple[Row, int]]) -> Iterator[list[Row]]:
        batch: list[Row] = []
        total = 0
        for row, size in sized:
            if batch and (len(batch) >= self._max_rows or total + size > self._max_bytes):
                yield batch
                batch, total = [], 0
            batch.append(row)
            total += size
        if batch:
            yield batch

    def _send(self, batch: list[Row], retry_stopped: bool) -> list[InsertFailure]:
        try:
            errors = self._insert_all(batch)
        except _Rejected as rejected:
            if len(batch) > 1:
                return [failure for row in batch for failure in self._send([row], retry_stopped)]
            return [_request_failure(batch[0], rejected.cause)]
        return self._settle(batch, errors, retry_stopped)

    def _settle(
        self, batch: list[Row], errors: Sequence[Mapping[str, Any]], retry_stopped: bool
    ) -> list[InsertFailure]:
        failures: list[InsertFailure] = []
        again: list[Row] = []
        for entry in errors:
            row = batch[int(entry["index"])]
            first = (entry.get("errors") or [{}])[0]
            if retry_stopped and str(first.get("reason") or "").lower() in _RETRY_ALONE:
                again.append(row)
            else:
                failures.append(_row_failure(row, first))
        if again:
            # Sent again without the rows that failed; a second stop is reported as is.
            failures.extend(self._send(again, retry_stopped=False))
        return failures

    def _insert_all(self, batch: list[Row]) -> Sequence[Mapping[str, Any]]:
        with translated(f"insert {len(batch)} rows into {self._table.table_id}"):
            try:
                return self._client.insert_rows_json(
                    self._table,
                    [dict(row.data) for row in batch],
                    row_ids=[row.insert_id for row in batch],
                    skip_invalid_rows=False,
                    ignore_unknown_values=False,
                    retry=self._retry,
                    timeout=self._timeout,
                )
            except gexc.GoogleAPICallError as exc:
                if _rejects_request(exc):
                    raise _Rejected(exc) from exc
                raise


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
