"""A row the Write API refuses is reported, whatever else the same exchange answers."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import pytest
from google.cloud.bigquery_storage_v1 import types
from plowline_cloud.write_api import StreamWriter
from plowline_core.ports import InsertFailure, InsertReason, Row
from plowline_core.schema.field import Field, FieldType, Mode
from plowline_core.testing.table import InMemoryTableSchemaStore

FIELDS = (Field("event_id", FieldType.STRING, Mode.REQUIRED),)
STREAM = "projects/p/datasets/d/tables/t/streams/_default"
ROWS = [Row(f"e{i}", {"event_id": f"e{i}"}) for i in range(3)]

Answer = types.AppendRowsResponse


def _ok() -> Answer:
    return Answer(append_result=Answer.AppendResult())


def _row_error(index: int) -> Answer:
    return Answer(row_errors=[types.RowError(index=index, message=f"row {index} is bad")])


def _in_band(code: int, message: str) -> Answer:
    return Answer(error={"code": code, "message": message})


class ScriptedWriteClient:
    """Google's side of AppendRows, scripted: one list of answers per connection.

    Every request of a connection gets the next answer of its script (a request past
    the script is answered OK); rows of a request answered OK are appended to ``table``.
    """

    def __init__(self, scripts: Sequence[Sequence[Answer]]) -> None:
        self._scripts = [list(script) for script in scripts]
        self.table: list[bytes] = []

    def append_rows(
        self, requests: Iterable[types.AppendRowsRequest], **_: Any
    ) -> Iterator[Answer]:
        script = self._scripts.pop(0) if self._scripts else []
        for request in requests:
            answer = script.pop(0) if script else _ok()
            if not answer.error.code and not answer.row_errors:
                self.table.extend(request.proto_rows.rows.serialized_rows)
            yield answer


def _write(client: ScriptedWriteClient, rows: Sequence[Row]) -> list[InsertFailure]:
    writer = StreamWriter(client, InMemoryTableSchemaStore(FIELDS), sleep=lambda _: None)  # type: ignore[arg-type]  # scripted client
    return writer.write(STREAM, rows)


@pytest.mark.parametrize(
    "second",
    [
        pytest.param(_in_band(13, "internal error"), id="in-band-INTERNAL"),
        pytest.param(_in_band(14, "backend unavailable"), id="in-band-UNAVAILABLE"),
        pytest.param(
            _in_band(3, "Input schema has more fields than BigQuery schema"),
            id="schema-race",
        ),
    ],
)
def test_refused_row_is_reported_when_the_resend_is_refused_in_band(second: Answer) -> None:
    """Row errors, then a non-row refusal of the resend: the refused row is still returned."""
    client = ScriptedWriteClient([[_row_error(0)], [second]])

    failures = _write(client, ROWS)

    assert [(f.row.insert_id, f.reason) for f in failures] == [("e0", InsertReason.INVALID)]
    assert len(client.table) == 2


def test_refused_row_is_reported_when_another_request_of_the_exchange_fails() -> None:
    """Two requests on one connection, one with a row error, one with INTERNAL: 1 + 2."""
    client = ScriptedWriteClient([[_row_error(0), _in_band(13, "internal error")]])
    writer = StreamWriter(
        client,  # type: ignore[arg-type]  # scripted client
        InMemoryTableSchemaStore(FIELDS),
        max_request_rows=2,
        sleep=lambda _: None,
    )
    rows = [Row(f"e{i}", {"event_id": f"e{i}"}) for i in range(4)]

    failures = writer.write(STREAM, rows)

    assert [f.row.insert_id for f in failures] == ["e0"]
    assert len(client.table) == 3
