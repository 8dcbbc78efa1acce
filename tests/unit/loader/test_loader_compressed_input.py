"""Compressed batches in a partition: every record one event, a delivery acked once all are durable."""

from __future__ import annotations

import base64
import gzip
import json
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft4Validator, FormatChecker
from plowline_cloud.pubsub.pulled import PulledMessage
from plowline_core.badrows import Processor
from plowline_core.errors import TransientError
from plowline_core.event.compressed import Compression, write_batch
from plowline_core.event.fields import ATOMIC_COLUMNS
from plowline_core.iglu.config import EmbeddedConnection, RepositoryRef
from plowline_core.iglu.key import SchemaKey
from plowline_core.iglu.resolver import Resolver
from plowline_core.ports import InsertFailure, Row
from plowline_core.schema.entity import ColumnMode
from plowline_core.testing.clock import FixedClock
from plowline_core.testing.registry import InMemoryRegistry
from plowline_core.testing.sinks import InMemoryPublisher, InMemoryRowSink
from plowline_core.testing.table import InMemoryTableSchemaStore
from plowline_core.testing.tsv import enriched_line
from plowline_core.transform.row import RowBuilder
from plowline_loader.batch.announcements import TypeTracker
from plowline_loader.batch.processor import BatchProcessor, Destinations
from plowline_loader.compressed_input import Decompression
from plowline_loader.partition import process_in_chunks
from plowline_loader.settings import load_settings

pytestmark = pytest.mark.unit

NOW = datetime(2024, 5, 1, 10, 0, 5, tzinfo=UTC)
PUBLISHED_US = (NOW - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)
SUBSCRIPTION = "projects/p/subscriptions/in"
BADROWS = "iglu:com.snowplowanalytics.snowplow.badrows"
BOTH = [pytest.param(Compression.GZIP, id="gzip"), pytest.param(Compression.ZSTD, id="zstd")]


class Rig:
    """A BatchProcessor over in-memory fakes (atomic columns only)."""

    def __init__(self, sink_failing: set[int] | None = None) -> None:
        clock = FixedClock(NOW)
        self.table = InMemoryTableSchemaStore(list(ATOMIC_COLUMNS))
        self.sink = _FailingSink(self.table, sink_failing or set())
        self.bad_rows, self.failed = InMemoryPublisher(), InMemoryPublisher()
        ref = RepositoryRef("acme", 0, (), EmbeddedConnection("acme"))
        builder = RowBuilder(
            Resolver([(ref, InMemoryRegistry("acme", {}))], clock), ColumnMode.FULL
        )
        destinations = Destinations(
            self.table, self.sink, InMemoryPublisher(), self.bad_rows, self.failed
        )
        self.processor = BatchProcessor(
            builder,
            destinations,
            TypeTracker(ColumnMode.FULL),
            clock,
            Processor("plowline-loader", "0.1.0"),
        )

    def bad(self) -> list[dict[str, Any]]:
        """Return the published failed events, decoded."""
        return [json.loads(data) for data in self.bad_rows.messages]


class _FailingSink(InMemoryRowSink):
    """Fails the insert calls numbered in ``failing`` (1-based) with a TransientError."""

    def __init__(self, table: InMemoryTableSchemaStore, failing: set[int]) -> None:
        super().__init__(table)
        self.writes = 0
        self.failing = failing

    def insert(self, rows: Sequence[Row]) -> list[InsertFailure]:
        self.writes += 1
        if self.writes in self.failing:
            raise TransientError("insertAll: 503 backend error")
        return super().insert(rows)


def _lines(count: int) -> list[bytes]:
    return [enriched_line(event_id=str(uuid.uuid4())).encode() for _ in range(count)]


def _delivery(name: str, data: bytes) -> PulledMessage:
    return PulledMessage(f"ack-{name}", SUBSCRIPTION, name, PUBLISHED_US, data)


@pytest.mark.parametrize("compression", BOTH)
def test_a_batch_loads_like_its_lines(compression: Compression) -> None:
    """A compressed batch of three lines lands three rows, as the three plain lines would."""
    rig = Rig()
    lines = _lines(3)
    rows = [_delivery("batch", write_batch(lines, compression)), _delivery("plain", _lines(1)[0])]

    report, handed_back = process_in_chunks(rig.processor, rows)

    assert (report.outcome.events_in, report.outcome.good, handed_back) == (4, 4, [])
    assert len(rig.sink.rows) == 4


@pytest.mark.parametrize("compression", BOTH)
def test_an_oversized_record_is_a_2x_size_violation_and_the_rest_loads(
    compression: Compression,
) -> None:
    """A record over maxBytesSinglePayload is a size_violation naming it; the others land."""
    rig = Rig()
    short, long = _lines(2)
    data = write_batch([short, long + b"x" * 2000], compression)
    limit = len(short) + 10

    report, _ = process_in_chunks(
        rig.processor, [_delivery("b", data)], decompression=Decompression(limit)
    )

    (violation,) = rig.bad()
    failure = violation["data"]["failure"]
    assert (report.outcome.good, report.outcome.bad) == (1, 1)
    assert violation["schema"] == f"{BADROWS}/size_violation/jsonschema/1-0-0"
    assert (failure["maximumAllowedSizeBytes"], failure["actualSizeBytes"]) == (
        limit,
        len(long) + 2000,
    )
    assert failure["expectation"] == (
        f"Payload will exceed maximum allowed size of {limit} after {compression} decompression"
    )
    assert violation["data"]["payload"] == base64.b64encode(data).decode()


@pytest.mark.parametrize("compression", BOTH)
def test_a_corrupt_batch_is_one_2x_parsing_error(compression: Compression) -> None:
    """A corrupt stream is one loader_parsing_error carrying the message in base64."""
    rig = Rig()
    whole = write_batch(_lines(2), compression)
    data = whole[: len(whole) // 2]

    process_in_chunks(rig.processor, [_delivery("b", data)])

    (parsing,) = rig.bad()
    assert parsing["schema"] == f"{BADROWS}/loader_parsing_error/jsonschema/2-0-0"
    assert parsing["data"]["failure"] == {
        "type": "RowDecodingError",
        "errors": [
            {
                "type": "UnhandledRowDecodingError",
                "message": f"corrupt {compression}-compressed payload",
            }
        ],
    }
    assert parsing["data"]["payload"] == base64.b64encode(data).decode()


def test_a_wrong_format_version_is_one_failure_and_no_row() -> None:
    """A batch of format version 2 is one failed event naming the versions; nothing lands."""
    rig = Rig()
    data = write_batch(_lines(2), Compression.GZIP)
    body = bytearray(gzip.decompress(data))
    body[0] = 2

    report, handed_back = process_in_chunks(
        rig.processor, [_delivery("b", gzip.compress(bytes(body)))]
    )

    (failed,) = rig.bad()
    message = failed["data"]["failure"]["errors"][0]["message"]
    assert (report.outcome.events_in, report.outcome.good, handed_back) == (1, 0, [])
    assert message == "unsupported versions in gzip-compressed record header: 2, 1"


def test_a_delivery_partly_written_is_parked_not_handed_back() -> None:
    """Issue 37, finding 2: records over two chunks, the second insert failing: the delivery
    is parked with its one written record named durable, never handed back to be rewritten."""
    rig = Rig(sink_failing={2})
    rows = [
        _delivery("first", write_batch(_lines(3), Compression.ZSTD)),
        _delivery("spanning", write_batch(_lines(3), Compression.ZSTD)),
    ]

    report, handed_back = process_in_chunks(rig.processor, rows, chunk_size=4)

    parked = [(p.ack_id, p.durable) for p in report.parked]
    assert (4, [], [("ack-spanning", frozenset({0}))]) == (
        report.outcome.good,
        handed_back,
        parked,
    )


def test_a_delivery_wholly_in_written_chunks_is_acked() -> None:
    """A delivery whose records all landed before a later insert failed is not handed back."""
    rig = Rig(sink_failing={2})
    rows = [
        _delivery("first", write_batch(_lines(4), Compression.GZIP)),
        _delivery("second", write_batch(_lines(2), Compression.GZIP)),
    ]

    _, handed_back = process_in_chunks(rig.processor, rows, chunk_size=4)

    assert handed_back == ["ack-second"]


def test_a_failed_event_not_published_parks_its_delivery_only() -> None:
    """badRows failing after the insert: the batch with the oversized record is parked with
    its good record durable (never rewritten); the clean batch is acked."""
    rig = Rig()
    rig.bad_rows.fail_with = TransientError("badRows: 503")
    line = _lines(1)[0]
    rows = [
        _delivery("clean", write_batch(_lines(2), Compression.GZIP)),
        _delivery("oversized", write_batch([line, line * 3], Compression.GZIP)),
    ]

    report, handed_back = process_in_chunks(
        rig.processor, rows, decompression=Decompression(len(line) + 1)
    )

    parked = [(p.ack_id, p.durable) for p in report.parked]
    assert ([], [("ack-oversized", frozenset({0}))], 3) == (
        handed_back,
        parked,
        report.outcome.good,
    )


def test_a_chunk_closes_at_max_bytes_in_batch() -> None:
    """Decompressed records past maxBytesInBatch start a new chunk (one insert each here)."""
    rig = Rig()
    lines = _lines(6)
    rows = [_delivery("b", write_batch(lines, Compression.ZSTD))]

    process_in_chunks(rig.processor, rows, decompression=Decompression(10_000_000, len(lines[0])))

    assert rig.sink.writes == 6


def test_plain_lines_do_not_count_against_max_bytes_in_batch() -> None:
    """Plain deliveries are held by the partition already: they stay in one chunk."""
    rig = Rig()
    rows = [_delivery(f"p{n}", line) for n, line in enumerate(_lines(6))]

    process_in_chunks(rig.processor, rows, decompression=Decompression(10_000_000, 1))

    assert rig.sink.writes == 1


def test_an_empty_batch_is_acked_with_no_event() -> None:
    """A batch of no records adds no outcome and is not handed back."""
    rig = Rig()

    report, handed_back = process_in_chunks(
        rig.processor, [_delivery("empty", write_batch([], Compression.GZIP))]
    )

    assert (report.outcome.events_in, handed_back) == (0, [])


def test_the_decompression_defaults_are_2x_reference_values() -> None:
    """Unset, the limits are 2.x's reference.conf defaults; the flags' names set them."""
    default = load_settings({"config": "c", "resolver": "r"})
    given = load_settings(
        {"config": "c", "resolver": "r", "max_bytes_single_payload": 7, "max_bytes_in_batch": 9}
    )

    assert (default.max_bytes_single_payload, default.max_bytes_in_batch) == (10_000_000, 5_242_880)
    assert (given.max_bytes_single_payload, given.max_bytes_in_batch) == (7, 9)


@pytest.mark.parametrize("compression", BOTH)
def test_every_failed_event_of_a_batch_is_valid_against_iglu_central(
    compression: Compression, iglu_central_dir: Path
) -> None:
    """The size violation, the corrupt stream and the wrong version each validate."""
    rig = Rig()
    line = _lines(1)[0]
    oversized = write_batch([line, line * 2], compression)
    corrupt = oversized[: len(oversized) - 3]
    version_2 = b"\x02\x01"
    wrong = gzip.compress(version_2) if compression is Compression.GZIP else _zstd(version_2)
    rows = [_delivery("o", oversized), _delivery("c", corrupt), _delivery("w", wrong)]

    process_in_chunks(rig.processor, rows, decompression=Decompression(len(line) + 1))

    bad = rig.bad()
    kinds = [document["schema"].split("/")[1] for document in bad]
    assert (kinds.count("loader_parsing_error"), kinds.count("size_violation") >= 1) == (2, True)
    assert [[]] * len(bad) == [_schema_errors(iglu_central_dir, document) for document in bad]


def _zstd(data: bytes) -> bytes:
    return zstandard.ZstdCompressor().compress(data)


def _schema_errors(iglu_central_dir: Path, document: dict[str, Any]) -> list[str]:
    key = SchemaKey.parse(document["schema"])
    schema = json.loads((iglu_central_dir / "schemas" / key.to_path()).read_text())
    validator = Draft4Validator(schema, format_checker=FormatChecker())
    return [error.message for error in validator.iter_errors(document["data"])]


@pytest.mark.parametrize("compression", BOTH)
def test_a_batch_that_cannot_be_read_is_counted_under_its_own_code(
    compression: Compression,
) -> None:
    """Corrupt and wrong-version batches count as ``parsing.compressed_batch``, not row decoding."""
    rig = Rig()
    version_2 = b"\x02\x01"
    wrong = gzip.compress(version_2) if compression is Compression.GZIP else _zstd(version_2)
    rows = [_delivery("c", compression.signature + b"garbage"), _delivery("w", wrong)]

    report, _ = process_in_chunks(rig.processor, rows)

    assert dict(report.outcome.bad_by_code) == {"parsing.compressed_batch": 2}


def _mixed(sizes: list[int]) -> tuple[list[PulledMessage], dict[str, list[str]]]:
    """Return deliveries (-1: a plain line, else a batch of that many lines) and their ids."""
    rows: list[PulledMessage] = []
    ids_of: dict[str, list[str]] = {}
    for n, size in enumerate(sizes):
        lines = _lines(1 if size < 0 else size)
        data = lines[0] if size < 0 else write_batch(lines, Compression.ZSTD)
        rows.append(_delivery(f"d{n}", data))
        ids_of[f"ack-d{n}"] = [line.split(b"\t")[6].decode() for line in lines]
    return rows, ids_of


MIXED = {
    "sizes": st.lists(st.integers(-1, 4), min_size=1, max_size=6),
    "chunk_size": st.integers(1, 5),
    "failing": st.integers(1, 6),
}


@settings(max_examples=40, deadline=None)
@given(**MIXED)
def test_a_delivery_not_handed_back_has_every_record_in_the_table(
    sizes: list[int], chunk_size: int, failing: int
) -> None:
    """Whatever the batches, the chunking and the insert that fails: acked means all landed."""
    rig = Rig(sink_failing={failing})
    rows, ids_of = _mixed(sizes)

    report, handed_back = process_in_chunks(rig.processor, rows, chunk_size=chunk_size)

    landed = {row.insert_id for row in rig.sink.rows}
    parked = {p.ack_id for p in report.parked}
    acked = [row.ack_id for row in rows if row.ack_id not in {*handed_back, *parked}]
    assert [ack for ack in acked if not set(ids_of[ack]) <= landed] == []


@settings(max_examples=40, deadline=None)
@given(**MIXED)
def test_a_delivery_handed_back_has_nothing_written_and_a_parked_one_names_what_was(
    sizes: list[int], chunk_size: int, failing: int
) -> None:
    """Issue 37, finding 2: whatever the chunking and the failing insert, a delivery handed
    back has no record in the table (its redelivery rewrites nothing), and a parked one names
    exactly its records in the table as durable."""
    rig = Rig(sink_failing={failing})
    rows, ids_of = _mixed(sizes)

    report, handed_back = process_in_chunks(rig.processor, rows, chunk_size=chunk_size)

    landed = {row.insert_id for row in rig.sink.rows}
    rewritten = [ack for ack in handed_back if set(ids_of[ack]) & landed]
    misnamed = [
        p.ack_id
        for p in report.parked
        if p.durable != {i for i, e in enumerate(ids_of[p.ack_id]) if e in landed}
    ]
    assert (rewritten, misnamed) == ([], [])
