"""Google's side of the Storage Write API, modelled and scripted (a fake ``BigQueryWriteClient``).

``ScriptedWriteClient`` has the four methods plowline's Write API sinks call
(``create_write_stream``, ``append_rows``, ``finalize_write_stream``,
``batch_commit_write_streams``) and keeps what BigQuery would: streams (COMMITTED or
PENDING, with their rows and state) and the committed rows of each table, decoded from
the protobuf rows with the descriptor each connection sent. It answers as BigQuery does
(offsets: ALREADY_EXISTS behind the end, OUT_OF_RANGE past it; a request holding a row
of ``bad_ids``: ``row_errors`` for those rows, nothing appended) unless a script says
otherwise: each request of an AppendRows exchange takes the next ``AppendFault``, each
BatchCommitWriteStreams the next ``CommitFault``.

Notes:
    A fault describes what happened at Google's end, including the lost answers a
    network causes: ``LOST_APPLIED`` appends the request and then breaks the connection
    (the answer never comes), ``LOST`` breaks it before the request is read.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from google.api_core import exceptions as gexc
from google.cloud.bigquery_storage_v1 import types
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory
from google.protobuf.message import Message

SCHEMA_RACE_MESSAGE = "Input schema has more fields than BigQuery schema, extra fields: 'x'"
_SEC = types.StorageError.StorageErrorCode


class AppendFault(StrEnum):
    """What BigQuery (or the network) does with one AppendRows request."""

    OK = "ok"  # as BigQuery answers it (row errors for bad rows, offsets checked)
    INTERNAL = "internal"  # in-band INTERNAL: nothing appended
    UNAVAILABLE = "unavailable"  # in-band UNAVAILABLE: nothing appended
    SCHEMA_RACE = "schema-race"  # in-band INVALID_ARGUMENT, the table's schema changed
    LOST = "lost"  # the connection breaks before the request is applied
    LOST_APPLIED = "lost-applied"  # applied, then the connection breaks: no answer
    TIMEOUT_APPLIED = "timeout-applied"  # applied, then the call's deadline passes
    STREAM_GONE = "stream-gone"  # the stream is finalized under the writer from now on


class CommitFault(StrEnum):
    """What BigQuery does with one BatchCommitWriteStreams."""

    OK = "ok"  # commit, or the stream errors BigQuery gives for the streams' states
    UNAVAILABLE = "unavailable"  # the call fails; nothing committed
    LOST_APPLIED = "lost-applied"  # committed, then the answer is lost
    # The streams named can never be committed from now on (nothing of them committed):
    EXPIRED = "expired"  # garbage-collected: STREAM_NOT_FOUND
    INVALID_STREAM_STATE = "invalid-stream-state"  # INVALID_STREAM_STATE
    SCHEMA_MISMATCH = "schema-mismatch"  # a column was dropped: SCHEMA_MISMATCH_EXTRA_FIELDS


_SPOILED = {
    CommitFault.EXPIRED: "gone",
    CommitFault.INVALID_STREAM_STATE: "invalid",
    CommitFault.SCHEMA_MISMATCH: "mismatched",
}
_SPOILED_ERRORS = {
    "invalid": (_SEC.INVALID_STREAM_STATE, "The stream is invalid and cannot be committed."),
    "mismatched": (_SEC.SCHEMA_MISMATCH_EXTRA_FIELDS, "input schema has more fields"),
}


@dataclass
class _Stream:
    table: str
    kind: int
    rows: list[dict[str, Any]] = field(default_factory=list)
    state: str = "open"  # open, finalized, committed; gone, invalid, mismatched: never commits


class ScriptedWriteClient:
    """Google's Write API: a model of streams and tables, answering from scripts."""

    def __init__(
        self,
        *,
        bad_ids: Iterable[str] = (),
        appends: Iterable[AppendFault] = (),
        commits: Iterable[CommitFault] = (),
        key: str = "event_id",
    ) -> None:
        self.bad_ids = set(bad_ids)
        self.appends = list(appends)
        self.commits = list(commits)
        self.tables: dict[str, list[dict[str, Any]]] = {}
        self.streams: dict[str, _Stream] = {}
        self._key = key
        self._names = itertools.count()

    def committed(self, table_suffix: str = "") -> Counter[str]:
        """Return how many times each key is in the tables whose path ends ``table_suffix``."""
        counts: Counter[str] = Counter()
        for path, rows in self.tables.items():
            if path.endswith(table_suffix):
                counts.update(str(row.get(self._key)) for row in rows)
        return counts

    def spoil_pending(self, fault: CommitFault) -> None:
        """Make every finalized, uncommitted stream uncommittable as ``fault`` says."""
        for stream in self.streams.values():
            if stream.state == "finalized":
                stream.state = _SPOILED[fault]

    def create_write_stream(
        self, parent: str, write_stream: types.WriteStream, **_: Any
    ) -> types.WriteStream:
        name = f"{parent}/streams/s{next(self._names)}"
        self.streams[name] = _Stream(parent, int(write_stream.type_))
        return types.WriteStream(name=name, type_=write_stream.type_)

    def finalize_write_stream(self, name: str, **_: Any) -> types.FinalizeWriteStreamResponse:
        stream = self._stream(name)
        if stream.state == "open":
            stream.state = "finalized"
        return types.FinalizeWriteStreamResponse(row_count=len(stream.rows))

    def batch_commit_write_streams(
        self, request: types.BatchCommitWriteStreamsRequest, **_: Any
    ) -> types.BatchCommitWriteStreamsResponse:
        fault = self.commits.pop(0) if self.commits else CommitFault.OK
        names = list(request.write_streams)
        if fault is CommitFault.UNAVAILABLE:
            raise _error(gexc.ServiceUnavailable, "commit: backend unavailable")
        if fault in _SPOILED:
            for name in names:
                if self.streams[name].state != "committed":
                    self.streams[name].state = _SPOILED[fault]
        errors = [error for name in names if (error := self._commit_error(name, request.parent))]
        if errors:  # all or nothing
            return types.BatchCommitWriteStreamsResponse(stream_errors=errors)
        for name in names:
            stream = self.streams[name]
            stream.state = "committed"
            self.tables.setdefault(stream.table, []).extend(stream.rows)
        if fault is CommitFault.LOST_APPLIED:
            raise _error(gexc.ServiceUnavailable, "commit: connection reset")
        return types.BatchCommitWriteStreamsResponse(commit_time={"seconds": 1})

    def _commit_error(self, name: str, parent: str) -> types.StorageError | None:
        stream = self.streams.get(name)
        if stream is None or stream.state == "gone":
            return _storage_error(name, _SEC.STREAM_NOT_FOUND, f"stream {name} not found")
        if stream.state in _SPOILED_ERRORS:
            code, message = _SPOILED_ERRORS[stream.state]
            return _storage_error(name, code, message)
        if stream.state == "committed":
            return _storage_error(name, _SEC.STREAM_ALREADY_COMMITTED, "already committed")
        if stream.state != "finalized" or stream.table != parent:
            return _storage_error(name, _SEC.INVALID_STREAM_STATE, "stream is not finalized")
        return None

    def append_rows(
        self, requests: Iterable[types.AppendRowsRequest], **_: Any
    ) -> Iterator[types.AppendRowsResponse]:
        name = ""
        decode: _Decoder | None = None
        for request in requests:
            if request.write_stream:
                name = request.write_stream
                decode = _Decoder(request.proto_rows.writer_schema.proto_descriptor)
            if decode is None:
                raise _error(gexc.InvalidArgument, "the first request names no stream")
            fault = self.appends.pop(0) if self.appends else AppendFault.OK
            if fault is AppendFault.LOST:
                raise _error(gexc.ServiceUnavailable, "connection reset")
            if fault is AppendFault.STREAM_GONE:
                self._stream(name).state = "finalized"
            rows = [decode(raw) for raw in request.proto_rows.rows.serialized_rows]
            answer = self._append(name, request, rows, fault)
            if fault is AppendFault.LOST_APPLIED:
                raise _error(gexc.ServiceUnavailable, "connection reset after the append")
            if fault is AppendFault.TIMEOUT_APPLIED:
                raise _error(gexc.DeadlineExceeded, "deadline exceeded")
            yield answer

    def _append(
        self,
        name: str,
        request: types.AppendRowsRequest,
        rows: Sequence[dict[str, Any]],
        fault: AppendFault,
    ) -> types.AppendRowsResponse:
        if fault is AppendFault.INTERNAL:
            return _in_band(13, "internal error")
        if fault is AppendFault.UNAVAILABLE:
            return _in_band(14, "backend unavailable")
        if fault is AppendFault.SCHEMA_RACE:
            return _in_band(3, SCHEMA_RACE_MESSAGE)
        stream = self._stream(name)
        if stream.state != "open":
            return _in_band(9, f"stream {name} is {stream.state}: not found or finalized")
        if "offset" in request:
            at = int(request.offset)
            if at < len(stream.rows):
                return _in_band(6, f"offset {at} already exists")
            if at > len(stream.rows):
                return _in_band(11, f"offset {at} is past the end {len(stream.rows)}")
        bad = [i for i, row in enumerate(rows) if str(row.get(self._key)) in self.bad_ids]
        if bad:
            errors = [types.RowError(index=i, message=f"row {i} is invalid") for i in bad]
            return types.AppendRowsResponse(row_errors=errors, error={"code": 3})
        stream.rows.extend(rows)
        if stream.kind == types.WriteStream.Type.COMMITTED:
            self.tables.setdefault(stream.table, []).extend(rows)
        return types.AppendRowsResponse(append_result={"offset": len(stream.rows)})

    def _stream(self, name: str) -> _Stream:
        if name.endswith("/_default"):
            parent = name.rsplit("/streams/", 1)[0]
            return self.streams.setdefault(
                name, _Stream(parent, int(types.WriteStream.Type.COMMITTED))
            )
        stream = self.streams.get(name)
        if stream is None:
            raise _error(gexc.NotFound, f"stream {name} not found")
        return stream


class _Decoder:
    """Decode serialized rows with the descriptor a connection's first request sent."""

    def __init__(self, descriptor: descriptor_pb2.DescriptorProto) -> None:
        pool = descriptor_pool.DescriptorPool()
        file_proto = descriptor_pb2.FileDescriptorProto(name="row.proto", syntax="proto2")
        file_proto.message_type.append(descriptor)
        pool.Add(file_proto)
        self._type = message_factory.GetMessageClass(pool.FindMessageTypeByName(descriptor.name))

    def __call__(self, raw: bytes) -> dict[str, Any]:
        message: Message = self._type()
        message.ParseFromString(raw)
        decoded: dict[str, Any] = json_format.MessageToDict(
            message, preserving_proto_field_name=True
        )
        return decoded


def _error(kind: type[gexc.GoogleAPICallError], message: str) -> gexc.GoogleAPICallError:
    return kind(message)


def _in_band(code: int, message: str) -> types.AppendRowsResponse:
    return types.AppendRowsResponse(error={"code": code, "message": message})


def _storage_error(name: str, code: int, message: str) -> types.StorageError:
    return types.StorageError(code=code, entity=name, error_message=message)


def _commit_errors(
    names: Sequence[str], code: int, message: str
) -> types.BatchCommitWriteStreamsResponse:
    errors = [_storage_error(name, code, message) for name in names]
    return types.BatchCommitWriteStreamsResponse(stream_errors=errors)
