"""The loader's batch processing never raises, as a property: any bytes in, every message accounted.

A partition's messages go through ``process_in_chunks`` (the code a Spark task runs)
with the in-memory fakes behind ``BatchProcessor``. Whatever the bytes (not TSV, any
field count, invalid UTF-8, entities nested past the parser's limit, integers past 64
bits, NaN, lone surrogates, control and bidi characters, almost-valid schema URIs, rows
over the size limits, copies of one message), nothing raises, nothing is handed back
(everything is acked), and each message is exactly one of row, bad row or failed insert,
each published in a form its consumer can read.
"""

from __future__ import annotations

import json
import zlib
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from plowline_cloud.pubsub.pulled import PulledMessage
from plowline_core.badrows import IgluErrorRow, ParsingErrorRow, Processor
from plowline_core.badrows.envelope import parse_bad_row
from plowline_core.distinct_rows import DistinctRowSink
from plowline_core.event.fields import ATOMIC_COLUMNS, ENRICHED_FIELDS
from plowline_core.iglu.config import EmbeddedConnection, RepositoryRef
from plowline_core.iglu.key import SchemaKey
from plowline_core.iglu.resolver import Resolver
from plowline_core.messages import FailedInsert, decode_failed_insert
from plowline_core.ports import InsertFailure, InsertReason, Row, RowSink
from plowline_core.schema.columns import column_field
from plowline_core.schema.entity import ColumnMode, ShredProperty
from plowline_core.testing.clock import FixedClock
from plowline_core.testing.hostile_strategies import hostile_messages
from plowline_core.testing.registry import InMemoryRegistry
from plowline_core.testing.sinks import InMemoryPublisher, InMemoryRowSink
from plowline_core.testing.table import InMemoryTableSchemaStore
from plowline_core.testing.tsv import CONTEXTS_SCHEMA, UNSTRUCT_EVENT_SCHEMA, enriched_line
from plowline_core.transform.row import RowBuilder
from plowline_loader.batch.announcements import TypeTracker
from plowline_loader.batch.processor import BatchProcessor, Destinations
from plowline_loader.batch.sizes import Limits
from plowline_loader.partition import CHUNK_MESSAGES, process_in_chunks

NOW = datetime(2024, 5, 1, 10, 0, 5, tzinfo=UTC)
CTX = "iglu:com.acme/ctx/jsonschema/1-0-0"
LOOSE = "iglu:com.acme/loose/jsonschema/1-0-0"
CLICK = "iglu:com.acme/click/jsonschema/1-0-0"  # no column: its rows are failed inserts
SCHEMAS: dict[str, dict[str, Any]] = {
    CTX: {"type": "object", "properties": {"a": {"type": "integer"}}},
    LOOSE: {"type": "object", "properties": {"j": {}, "s": {"type": "string"}}},
    CLICK: {"type": "object", "properties": {"x": {"type": "string"}}},
}
ENTITY_URIS = [
    CTX,
    LOOSE,
    CLICK,
    "iglu:com.acme/missing/jsonschema/1-0-0",  # no such schema
    "iglu:com.acme/ctx/jsonschema/1-0",  # almost valid
    "iglu:com.acme/ctx/jsonschema/1-0-0 ",
    "iglu:com.acme//jsonschema/1-0-0",
    "iglu:com.acme/ctx/jsonschema/1-0-\u0660",
    "iglu:com.acme/ctx/avro/1-0-0",
]
FIELD_NAMES = [field.name for field in ENRICHED_FIELDS]
BAD_ROW_SCHEMA_PREFIX = "iglu:com.snowplowanalytics.snowplow.badrows/"
SMALL_LIMITS = Limits(max_row_bytes=4_000, max_bad_row_bytes=3_000)


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


_SCALARS = st.one_of(
    st.sampled_from(
        [
            "null",
            "true",
            "false",
            "NaN",
            "Infinity",
            "-Infinity",
            "-0",
            "1e400",
            "0.1e-400",
            str(2**64),
            str(-(2**70)),
            str(10**400),
            '"\\ud800"',
            '"\\udfff\\ud800"',
            '"\\u0000\\u001f\\u202e\\u2066"',
            '"\\"',
            "'x'",
            "01",
            "1.",
            "",
        ]
    ),
    st.integers().map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.text(max_size=12).map(lambda text: json.dumps(text, ensure_ascii=False)),
)
_KEYS = st.sampled_from(["a", "j", "s", "x", "schema", "data", ""]) | st.text(max_size=4)


def _containers(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    arrays = st.lists(children, max_size=4).map(lambda items: "[" + ",".join(items) + "]")
    members = st.lists(st.tuples(_KEYS, children), max_size=4)
    objects = members.map(
        lambda pairs: "{" + ",".join(f"{json.dumps(k)}:{v}" for k, v in pairs) + "}"
    )
    return arrays | objects


JSON_TEXT = st.recursive(_SCALARS, _containers, max_leaves=12) | st.sampled_from(
    [_deep(depth) for depth in (254, 255, 256, 300, 1024, 5000)]
)
DATA_TEXT = JSON_TEXT | st.builds(
    lambda key, value: "{" + json.dumps(key) + ":" + value + "}",
    st.sampled_from(["a", "j", "s", "x"]),
    JSON_TEXT,
)


def _entity_text(uri: str, data_text: str) -> str:
    return '{"schema":' + json.dumps(uri) + ',"data":' + data_text + "}"


@st.composite
def _entity(draw: st.DrawFn) -> str:
    return _entity_text(draw(st.sampled_from(ENTITY_URIS)), draw(DATA_TEXT))


def _contexts(entities: list[str]) -> str:
    return '{"schema":"' + CONTEXTS_SCHEMA + '","data":[' + ",".join(entities) + "]}"


def _unstruct(entity: str) -> str:
    return '{"schema":"' + UNSTRUCT_EVENT_SCHEMA + '","data":' + entity + "}"


def _line(**fields: str) -> bytes:
    return enriched_line(**fields).encode("utf-8", "surrogatepass")


EVENT_IDS = st.sampled_from(
    ["c6ef3124-b53a-4b13-a233-0088f79dcbcb", "2d6e6b1c-7a3f-4c4e-9d1a-0f6f3f0c9b11"]
) | st.uuids().map(str)
WITH_ENTITIES = st.builds(
    lambda event_id, contexts, unstruct: _line(
        event_id=event_id,
        contexts=_contexts(contexts) if contexts else "",
        unstruct_event=_unstruct(unstruct) if unstruct else "",
    ),
    EVENT_IDS,
    st.lists(_entity(), max_size=3),
    st.none() | _entity(),
)
HOSTILE_FIELD = st.builds(
    lambda name, text, event_id: _line(**{"event_id": event_id, name: text}),
    st.sampled_from(FIELD_NAMES),
    st.text(max_size=30) | JSON_TEXT,
    EVENT_IDS,
)
ANY_FIELDS = st.lists(st.text(max_size=6), max_size=300).map(
    lambda fields: "\t".join(fields).encode("utf-8", "surrogatepass")
)


@st.composite
def _corrupted(draw: st.DrawFn) -> bytes:
    line = draw(WITH_ENTITIES | HOSTILE_FIELD)
    at = draw(st.integers(0, len(line)))
    junk = draw(
        st.sampled_from([b"\xff", b"\xc3", b"\x00", b"\t", b"\n", b"\r\n", b"\xed\xa0\x80"])
    )
    return line[:at] + junk + line[at:]


@dataclass(frozen=True)
class Heavy:
    """A big message, built once and shown by name (hypothesis prints failing examples)."""

    name: str

    def __repr__(self) -> str:
        return f"Heavy({self.name!r})"

    @property
    def data(self) -> bytes:
        """The message body."""
        return _HEAVY[self.name]


_HEAVY = {
    "row-over-insert-limit": _line(page_title="x" * 11_000_000),
    "failed-insert-of-9mb": _line(
        unstruct_event=_unstruct(_entity_text(CLICK, '{"x":"' + "y" * 9_000_000 + '"}'))
    ),
    "json-column-300-deep": _line(
        contexts=_contexts([_entity_text(LOOSE, '{"j":' + _deep(300) + "}")])
    ),
    "contexts-100000-deep": _line(contexts=_deep(100_000)),
    "ten-megabytes-in-field-131": b"\t" * 130 + b"x" * 10_000_000,
}
HEAVY = st.sampled_from(sorted(_HEAVY)).map(Heavy)
MESSAGE = st.one_of(
    st.binary(max_size=200),
    ANY_FIELDS,
    WITH_ENTITIES,
    HOSTILE_FIELD,
    _corrupted(),
    hostile_messages(),  # the core's strategies and named hostile lines
)


@st.composite
def _batch(draw: st.DrawFn) -> list[bytes | Heavy]:
    messages: list[bytes | Heavy] = list(draw(st.lists(MESSAGE, min_size=1, max_size=8)))
    if draw(st.integers(0, 9)) == 0:
        messages.append(draw(HEAVY))
    copies = draw(st.lists(st.sampled_from(messages), max_size=2))  # redeliveries
    return messages + copies


def _sometimes_invalid(row: Row) -> InsertFailure | None:
    # The table refuses about one row in five on its own (BigQuery's per-row "invalid").
    if zlib.crc32(row.insert_id.encode()) % 5:
        return None
    return InsertFailure(row, InsertReason.INVALID, "invalid value", "page_title")


@dataclass
class _Rig:
    processor: BatchProcessor
    sink: InMemoryRowSink
    bad_rows: InMemoryPublisher
    failed_inserts: InMemoryPublisher
    limits: Limits


def _rig(limits: Limits, distinct: bool) -> _Rig:
    keys = {SchemaKey.parse(uri): schema for uri, schema in SCHEMAS.items()}
    registry = InMemoryRegistry("acme", keys)
    clock = FixedClock(NOW)
    ref = RepositoryRef("acme", 0, (), EmbeddedConnection("acme"))
    columns = [
        column_field(SchemaKey.parse(uri), SCHEMAS[uri], ShredProperty.CONTEXTS, ColumnMode.FULL)
        for uri in (CTX, LOOSE)
    ]
    table = InMemoryTableSchemaStore([*ATOMIC_COLUMNS, *columns])
    sink = InMemoryRowSink(table, reject=_sometimes_invalid)
    row_sink: RowSink = DistinctRowSink(sink) if distinct else sink
    types, bad_rows, failed = InMemoryPublisher(), InMemoryPublisher(), InMemoryPublisher()
    processor = BatchProcessor(
        RowBuilder(Resolver([(ref, registry)], clock), ColumnMode.FULL),
        Destinations(table, row_sink, types, bad_rows, failed),
        TypeTracker(ColumnMode.FULL),
        clock,
        Processor("plowline-loader", "0.1.0"),
        limits,
    )
    return _Rig(processor, sink, bad_rows, failed, limits)


def _rows(bodies: list[bytes | Heavy]) -> list[PulledMessage]:
    published_us = (NOW - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)
    return [
        PulledMessage(
            f"ack-{n}",
            "projects/p/subscriptions/in",
            str(n),
            published_us,
            body.data if isinstance(body, Heavy) else body,
        )
        for n, body in enumerate(bodies)
    ]


def _code(data: bytes) -> str:
    """Return the failure code of a published bad row, read back from its JSON."""
    parsed = parse_bad_row(data)
    assert parsed is not None
    key, body = parsed
    if key.name == "loader_parsing_error":
        return str(ParsingErrorRow(body["failure"], body["payload"]).code)
    if key.name == "loader_iglu_error":
        return str(IgluErrorRow(tuple(body["failure"]), body["payload"]).code)
    return {"size_violation": "size.row", "loader_runtime_error": "runtime"}[key.name]


def _readable_bad_row(data: bytes, limit: int) -> bool:
    document = orjson.loads(data)
    return len(data) <= limit and str(document["schema"]).startswith(BAD_ROW_SCHEMA_PREFIX)


@pytest.mark.parametrize(
    ("limits", "distinct"),
    [
        pytest.param(Limits(), False, id="default-limits"),
        pytest.param(SMALL_LIMITS, False, id="small-limits"),
        pytest.param(Limits(), True, id="exactly-once-sink"),
    ],
)
@settings(max_examples=150)
@given(bodies=_batch())
@example(bodies=[b"", b"a\tb", b"\xff\xfe", b"\t" * 130, _line(contexts=_deep(300))])
@example(bodies=[Heavy(name) for name in sorted(_HEAVY)])
def test_any_bytes_end_as_exactly_one_outcome_each(
    limits: Limits, distinct: bool, bodies: list[bytes | Heavy]
) -> None:
    """Any batch: nothing raises, all acked, good + bad + failed == in, every outcome readable
    and counted under the code it was published with."""
    rig = _rig(limits, distinct)

    # Copies in two chunks are the exactly-once ledger's business (not faked here), so the
    # exactly-once variant runs the batch as one chunk, as the loader does below 500 messages.
    chunk_size = CHUNK_MESSAGES if distinct else 3
    report, handed_back = process_in_chunks(rig.processor, _rows(bodies), chunk_size)
    outcome = report.outcome

    failed = [decode_failed_insert(data) for data in rig.failed_inserts.messages]
    assert (None, [], len(bodies)) == (report.transient_error, handed_back, outcome.events_in)
    assert outcome.good + outcome.bad + outcome.failed == outcome.events_in
    assert (outcome.bad, outcome.failed) == (len(rig.bad_rows.messages), len(failed))
    assert all(_readable_bad_row(data, limits.max_bad_row_bytes) for data in rig.bad_rows.messages)
    assert all(isinstance(item, FailedInsert) for item in failed)
    assert Counter(outcome.bad_by_code) == Counter(_code(data) for data in rig.bad_rows.messages)
    inserted = rig.sink.insert_ids
    if distinct:
        assert len(set(inserted)) == len(inserted) <= outcome.good
    else:
        assert len(inserted) == outcome.good
