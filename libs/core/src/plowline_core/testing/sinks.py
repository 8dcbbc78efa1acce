"""In-memory row sink, publisher and blob store that behave like the Google adapters."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from plowline_core.errors import ObjectExists, PermanentError, PlowlineError
from plowline_core.ports import InsertFailure, InsertReason, Row, TableSchemaStore
from plowline_core.schema.widening import missing_fields

MAX_REQUEST_BYTES = 10 * 1024 * 1024


class InMemoryRowSink:
    """Satisfy ``RowSink``; rows naming unknown fields fail like ``BigQueryRowSink``'s.

    Notes:
        Without a schema store every field is accepted. With one, a row naming a field
        the schema lacks triggers one ``refresh`` per call, then fails ``UNKNOWN_FIELD``
        with ``no such field: X.``; the other rows land. ``reject`` injects BigQuery's
        own per-row refusals (INVALID…); ``fail_with`` makes the next calls raise.
        Rows are appended in order; ``insert_id`` is not deduplicated (as bqemulator).
    """

    def __init__(
        self,
        schema_store: TableSchemaStore | None = None,
        *,
        reject: Callable[[Row], InsertFailure | None] | None = None,
        max_bytes: int = MAX_REQUEST_BYTES,
    ) -> None:
        self._schema = schema_store
        self._reject = reject
        self._max_bytes = max_bytes
        self.rows: list[Row] = []
        self.calls = 0
        self.fail_with: PlowlineError | None = None

    @property
    def insert_ids(self) -> list[str]:
        """The insert ids of the rows inserted so far, in order."""
        return [row.insert_id for row in self.rows]

    def insert(self, rows: Sequence[Row]) -> list[InsertFailure]:
        """Insert the rows that fit; return the rejected ones."""
        self.calls += 1
        if self.fail_with is not None:
            raise self.fail_with
        failures = self._unknown_fields(rows)
        refused = {id(failure.row) for failure in failures}
        for row in rows:
            if id(row) in refused:
                continue
            failure = self._judge(row)
            if failure is None:
                self.rows.append(row)
            else:
                failures.append(failure)
        return failures

    def _judge(self, row: Row) -> InsertFailure | None:
        size = len(json.dumps(row.data, default=str).encode()) + len(row.insert_id)
        if size > self._max_bytes:
            return InsertFailure(
                row, InsertReason.TOO_LARGE, f"row of {size} bytes exceeds {self._max_bytes}"
            )
        return self._reject(row) if self._reject is not None else None

    def _unknown_fields(self, rows: Sequence[Row]) -> list[InsertFailure]:
        if self._schema is None:
            return []
        fields = self._schema.fields()
        suspects = [row for row in rows if missing_fields(fields, row.data)]
        if not suspects:
            return []
        fields = self._schema.refresh()
        failures = []
        for row in suspects:
            missing = missing_fields(fields, row.data)
            if missing:
                failures.append(
                    InsertFailure(
                        row, InsertReason.UNKNOWN_FIELD, f"no such field: {missing[0]}.", missing[0]
                    )
                )
        return failures


@dataclass(frozen=True, slots=True)
class PublishedMessage:
    """A message an ``InMemoryPublisher`` took, with the id it returned."""

    message_id: str
    data: bytes
    attributes: Mapping[str, str]


class InMemoryPublisher:
    """Satisfy ``Publisher``; ids are "1", "2"… in publish order.

    Notes:
        All or nothing per call, as a caller of the adapter must assume: with
        ``fail_with`` set the call raises and nothing is recorded.
    """

    def __init__(self) -> None:
        self.published: list[PublishedMessage] = []
        self.fail_with: PlowlineError | None = None

    @property
    def messages(self) -> list[bytes]:
        """The payloads published so far, in order."""
        return [message.data for message in self.published]

    def publish(
        self, messages: Sequence[bytes], attributes: Mapping[str, str] | None = None
    ) -> list[str]:
        """Record the messages and return their ids."""
        if self.fail_with is not None:
            raise self.fail_with
        ids = []
        for data in messages:
            message_id = str(len(self.published) + 1)
            self.published.append(PublishedMessage(message_id, bytes(data), dict(attributes or {})))
            ids.append(message_id)
        return ids


class InMemoryBlobStore:
    """Satisfy ``BlobStore`` with a dict; refuses overwrites like ``GcsBlobStore``."""

    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}
        self.content_types: dict[str, str] = {}
        self.fail_with: PlowlineError | None = None

    def put(self, name: str, data: bytes, content_type: str = "application/x-ndjson") -> None:
        """Store a new object; raise ObjectExists if the name already exists."""
        self._maybe_fail()
        if name in self.objects:
            raise ObjectExists(f"{name} already exists")
        self.objects[name] = bytes(data)
        self.content_types[name] = content_type

    # Above list(): below it, ``list`` in an annotation names that method.
    def folders(self, prefix: str = "") -> list[str]:
        """Return the folders right under a prefix (each ending in ``/``), sorted."""
        self._maybe_fail()
        below = [name[len(prefix) :] for name in self.objects if name.startswith(prefix)]
        return sorted({f"{prefix}{rest.split('/', 1)[0]}/" for rest in below if "/" in rest})

    def list(self, prefix: str = "") -> list[str]:
        """Return the names under a prefix, sorted."""
        self._maybe_fail()
        return sorted(name for name in self.objects if name.startswith(prefix))

    def get(self, name: str) -> bytes:
        """Return an object's content (PermanentError when it does not exist)."""
        self._maybe_fail()
        if name not in self.objects:
            raise PermanentError(f"{name} does not exist")
        return self.objects[name]

    def move(self, source: str, destination: str) -> None:
        """Move an object; a destination with the same content only deletes the source."""
        data = self.get(source)
        if destination in self.objects and self.objects[destination] != data:
            raise PermanentError(f"{destination} already exists")
        self.objects[destination] = data
        self.content_types[destination] = self.content_types.pop(source)
        del self.objects[source]

    def _maybe_fail(self) -> None:
        if self.fail_with is not None:
            raise self.fail_with
