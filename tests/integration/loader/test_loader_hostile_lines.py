"""Hostile lines through the running loader, in every ``load.mode``: the query never stops.

Each mode gets a fresh table and topics (``mode_rig``) and one backlog: a few hundred good
events with the hostile set mixed in (empty, not TSV, too few and too many fields, bytes
that are not UTF-8, JSON the parser refuses, an entity nested 240 levels deep whose bad
row is deeper than orjson writes, entities past the parser's nesting rule and its limit,
a 9.5 MB message, a row that JSON escaping takes past 10 MB...). The loader runs in the
warmed session until the backlog is drained. Then: the query is still running without
an error, each hostile line is one bad row with its expected failure code (counted by
the loader and read back from the bad-rows topic), and every good line is in the table
exactly once.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

import pytest
from plowline_core.badrows import IgluErrorRow, ParsingErrorRow
from plowline_core.badrows.envelope import parse_bad_row
from plowline_core.testing.tsv import CONTEXTS_SCHEMA, enriched_line
from pyspark.sql import SparkSession

if TYPE_CHECKING:
    from conftest import ModeRig

GOOD_LINES = 300
UNKNOWN = "iglu:com.acme/unknown/jsonschema/1-0-0"  # the rig's Iglu repository is empty


class Hostile(NamedTuple):
    """One hostile message and the failure code of the bad row it must become."""

    name: str
    data: bytes
    code: str


def _line(**fields: str) -> bytes:
    return enriched_line(**{"event_id": str(uuid.uuid4()), **fields}).encode()


def _contexts(data_text: str, uri: str = UNKNOWN) -> str:
    return f'{{"schema":"{CONTEXTS_SCHEMA}","data":[{{"schema":"{uri}","data":{data_text}}}]}}'


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def _hostile() -> list[Hostile]:
    fields = _line().split(b"\t")
    not_utf8_event_id = b"\t".join([*fields[:6], b"\xff\xfe" + fields[6], *fields[7:]])
    return [
        Hostile("empty", b"", "parsing.not_tsv"),
        Hostile("no-tab", b"GET / HTTP/1.1", "parsing.not_tsv"),
        Hostile("fields-3", b"a\tb\tc", "parsing.field_number_mismatch"),
        Hostile("fields-6", b"\t".join(fields[:6]), "parsing.field_number_mismatch"),
        Hostile("fields-300", b"\t".join((fields * 3)[:300]), "parsing.field_number_mismatch"),
        Hostile("not-utf8-no-tab", b"\xff\xfe\x80", "parsing.invalid_utf8"),
        Hostile("not-utf8-event-id", not_utf8_event_id, "parsing.invalid_utf8"),
        Hostile("only-tabs", b"\t" * 130, "parsing.row_decoding"),
        Hostile("crlf", _line() + b"\r\n", "parsing.row_decoding"),
        Hostile("event-id-not-uuid", _line(event_id="x\u202ey"), "parsing.row_decoding"),
        Hostile(
            "bad-timestamp", _line(collector_tstamp="2024-13-45 99:00:00"), "parsing.row_decoding"
        ),
        Hostile("int-past-64-bits", _line(txn_id="1" * 30), "parsing.row_decoding"),
        Hostile("json-nan", _line(contexts=_contexts('{"a":NaN}')), "parsing.row_decoding"),
        Hostile(
            "json-lone-surrogate",
            _line(contexts=_contexts('{"a":"\\ud800"}')),
            "parsing.row_decoding",
        ),
        Hostile(
            "almost-valid-uri",
            _line(contexts=_contexts("{}", "iglu:com.acme/unknown/jsonschema/1-0")),
            "parsing.row_decoding",
        ),
        Hostile("unknown-schema", _line(contexts=_contexts('{"a":1}')), "iglu.resolution"),
        # Accepted by the parser; its bad row nests past orjson's 255 levels with the envelope.
        Hostile("nested-240", _line(contexts=_contexts(_nested(240))), "iglu.resolution"),
        Hostile("nested-300", _line(contexts=_contexts(_nested(300))), "parsing.row_decoding"),
        Hostile("nested-2000", _line(contexts=_contexts(_nested(2000))), "parsing.row_decoding"),
        Hostile("row-past-10mb-escaped", _line(page_title="\x01" * 1_800_000), "size.row"),
        Hostile("message-9.5mb", b"x" * 9_500_000, "size.row"),
    ]


def _good() -> list[tuple[bytes, dict[str, str]]]:
    plain = [(_line(), {}) for _ in range(GOOD_LINES - 2)]
    odd = _line(page_title="\x00\x01\x1b[31m\u202eevil\u2066\u200f\ufeff")
    attributes = {f"k{i}\u202e": "\u0000\U0001f600" * 100 for i in range(100)}
    return [*plain, (odd, {}), (_line(), attributes)]


def _backlog() -> tuple[list[tuple[bytes, dict[str, str]]], list[Hostile]]:
    """Return every message to publish (good and hostile interleaved) and the hostile set."""
    hostile, good = _hostile(), _good()
    step = len(good) // len(hostile)
    bodies: list[tuple[bytes, dict[str, str]]] = []
    for index, item in enumerate(hostile):
        bodies.extend(good[index * step : (index + 1) * step])
        # Pub/Sub refuses a message with neither data nor attributes.
        bodies.append((item.data, {} if item.data else {"empty": "yes"}))
    bodies.extend(good[len(hostile) * step :])
    return bodies, hostile


def _code(data: bytes) -> str:
    """Return the failure code of a published bad row, read back from its JSON."""
    parsed = parse_bad_row(data)
    assert parsed is not None, data[:200]
    key, body = parsed
    if key.name == "loader_parsing_error":
        return str(ParsingErrorRow(body["failure"], body["payload"]).code)
    if key.name == "loader_iglu_error":
        return str(IgluErrorRow(tuple(body["failure"]), body["payload"]).code)
    return {"size_violation": "size.row", "loader_runtime_error": "runtime"}[key.name]


@pytest.mark.parametrize(
    "load",
    [
        pytest.param({"mode": "STREAMING_INSERTS", "retry": False}, id="streaming-inserts"),
        pytest.param({"mode": "STORAGE_WRITE_API", "stream": "default"}, id="write-api-default"),
        pytest.param(
            {"mode": "STORAGE_WRITE_API", "stream": "exactly-once"}, id="write-api-exactly-once"
        ),
        pytest.param({"mode": "FILE_LOADS", "frequency": 100}, id="file-loads"),
    ],
)
def test_hostile_lines_become_bad_rows_and_the_query_keeps_running(
    mode_rig: Callable[[dict[str, Any]], ModeRig],  # first: the stack starts before Spark
    spark: SparkSession,
    load: dict[str, Any],
) -> None:
    """Each hostile line is one bad row of its code; the good lines land once; the query runs on."""
    rig = mode_rig(load)
    bodies, hostile = _backlog()
    rig.publish_bodies(bodies)
    loader, running = rig.load_backlog(spark, max_messages=100)

    totals = loader.writer.totals
    codes = Counter(item.code for item in hostile)
    expected = ((True, None), (GOOD_LINES, len(hostile), 0), codes, (GOOD_LINES, GOOD_LINES))
    assert expected == (
        running,
        (totals.good, totals.bad, totals.failed),
        Counter(totals.bad_by_code),
        rig.counts(),
    )
    assert codes == Counter(_code(data) for data in rig.bad_rows())
