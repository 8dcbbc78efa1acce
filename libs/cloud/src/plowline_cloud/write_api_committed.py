"""The Write API sink of ``load.stream: default``: a COMMITTED stream of its own, with offsets.

Rows are visible as soon as an append is answered, as on the table's ``_default`` stream,
but every request carries its offset (``write_api_offsets``): when a connection breaks
after BigQuery applied an append and before its answer, the append is sent again at the
same offset and BigQuery answers ALREADY_EXISTS instead of appending it twice. The
``_default`` stream takes no offsets, so there a lost answer left two choices, both bad:
send again (a duplicate, 250 of 300 rows with half the streams broken) or give up.

Notes:
    One stream per sink, created on the first insert and kept while it works: a loader's
    Python worker builds one sink per table and reuses it for every micro-batch, so the
    streams created stay far under BigQuery's CreateWriteStream quota (10,000 per hour
    per project and region). A new stream replaces it only when the old one is gone
    (not found, finalized) or its offsets disagree with the sink's. Not concurrent: one
    insert at a time per sink (a Spark Python worker runs one task at a time).
    Still at least once across deliveries: a message Pub/Sub delivers twice is appended
    twice (the Write API keeps no insertId); ``stream: exactly-once`` prevents that.
    A request unanswered after every resend leaves its rows in doubt: the stream is
    dropped and the call raises ``TransientError`` (Pub/Sub redelivers; a duplicate is
    possible only then, when BigQuery stayed unreachable for the whole retry budget).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from google.cloud import bigquery
from google.cloud.bigquery_storage_v1 import BigQueryWriteClient, types
from plowline_core.errors import TransientError
from plowline_core.ports import InsertFailure, Row, TableSchemaStore

from plowline_cloud.errors import translated
from plowline_cloud.write_api import StreamWriter, table_path
from plowline_cloud.write_api_offsets import StreamCursor, StreamLost


class WriteApiRowSink:
    """Append rows once each to a COMMITTED stream of the table (satisfies ``RowSink``)."""

    def __init__(
        self,
        client: BigQueryWriteClient,
        table: bigquery.TableReference,
        schema_store: TableSchemaStore,
        *,
        fresh_streams: int = 3,
        **options: Any,
    ) -> None:
        self._client = client
        self._parent = table_path(table)
        self._fresh_streams = fresh_streams  # streams tried in one insert when one is lost
        self._writer = StreamWriter(client, schema_store, **options)
        self._cursor: StreamCursor | None = None
        self.streams_created = 0

    @property
    def stream(self) -> str | None:
        """The COMMITTED stream the next insert appends to (None before the first)."""
        return None if self._cursor is None else self._cursor.stream

    @property
    def bytes_sent(self) -> int:
        """Serialized row bytes sent so far (for benchmarks)."""
        return self._writer.bytes_sent

    def insert(self, rows: Sequence[Row]) -> list[InsertFailure]:
        """Append rows; return the rejected ones (raise TransientError when BigQuery is failing).

        Raises:
            TransientError: BigQuery kept failing, or the stream was lost with some of
                these rows possibly on it (redeliver the message).
            PermanentError: the table is unusable (not found, permission).
        """
        lost: StreamLost | None = None
        for _ in range(self._fresh_streams):
            cursor = self._cursor or self._open()
            start = cursor.next_offset
            try:
                return self._writer.write(cursor.stream, rows, cursor=cursor)
            except StreamLost as error:
                self._cursor = None  # the next insert opens a new stream
                if error.doubtful or cursor.next_offset != start:
                    raise  # some of these rows are (or may be) on the lost stream
                lost = error  # none of them reached it: all go to a new stream
        raise TransientError(f"{self._fresh_streams} write streams lost in a row: {lost}")

    def _open(self) -> StreamCursor:
        stream = types.WriteStream(type_=types.WriteStream.Type.COMMITTED)
        with translated(f"create a COMMITTED stream on {self._parent}"):
            created = self._client.create_write_stream(parent=self._parent, write_stream=stream)
        self.streams_created += 1
        self._cursor = StreamCursor(str(created.name))
        return self._cursor
