"""The Write API sink of ``load.stream: default``: a COMMITTED stream of its own, with offsets.

Rows are visible as soon as an append is answered, as on the table's ``_default`` stream,
but every request carries its offset (``write_api_offsets``): when a connection breaks
after BigQuery applied an append and before its answer, the append is sent again at the
same offset and BigQuery answers ALREADY_EXISTS instead of appending it twice. The
``_default`` stream takes no offsets, so there a lost answer left two choices, both bad:
send again (a duplicate, 250 of 300 rows with half the streams broken) or give up.

Notes:
    Streams are created on demand and kept while they work: an insert takes a free one
    (a COMMITTED stream takes one writer at a time) and gives it back. A loader's Python
    worker builds one sink per table, reuses it for every micro-batch and runs one task at
    a time, so it creates one stream, far under BigQuery's CreateWriteStream quota (10,000
    per hour per project and region); concurrent inserts on one sink get a stream each.
    A stream is dropped only when it is gone (not found, finalized) or its offsets
    disagree with the sink's.
    Still at least once across deliveries: a message Pub/Sub delivers twice is appended
    twice (the Write API keeps no insertId); ``stream: exactly-once`` prevents that.
    A request unanswered after every resend leaves its rows in doubt: the stream is
    dropped and the call raises ``TransientError`` (Pub/Sub redelivers; a duplicate is
    possible only then, when BigQuery stayed unreachable for the whole retry budget).
"""

from __future__ import annotations

import threading
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
        self._free: list[StreamCursor] = []  # streams no insert is appending to
        self._lock = threading.Lock()
        self.streams_created = 0

    @property
    def streams(self) -> list[str]:
        """The COMMITTED streams kept for the next inserts (none before the first)."""
        with self._lock:
            return [cursor.stream for cursor in self._free]

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
            cursor = self._take() or self._open()
            start = cursor.next_offset
            try:
                failures = self._writer.write(cursor.stream, rows, cursor=cursor)
            except StreamLost as error:  # dropped: never given back
                if error.doubtful or cursor.next_offset != start:
                    raise  # some of these rows are (or may be) on the lost stream
                lost = error  # none of them reached it: all go to a new stream
                continue
            except Exception:
                self._give_back(cursor)  # its cursor still says where its end is
                raise
            self._give_back(cursor)
            return failures
        raise TransientError(f"{self._fresh_streams} write streams lost in a row: {lost}")

    def _take(self) -> StreamCursor | None:
        with self._lock:
            return self._free.pop() if self._free else None

    def _give_back(self, cursor: StreamCursor) -> None:
        with self._lock:
            self._free.append(cursor)

    def _open(self) -> StreamCursor:
        stream = types.WriteStream(type_=types.WriteStream.Type.COMMITTED)
        with translated(f"create a COMMITTED stream on {self._parent}"):
            created = self._client.create_write_stream(parent=self._parent, write_stream=stream)
        with self._lock:
            self.streams_created += 1
        return StreamCursor(str(created.name))
