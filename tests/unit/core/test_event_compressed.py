"""Compressed batches: recognised by their signature, read record by record, every failure one item."""

from __future__ import annotations

import gzip
import zlib

import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st
from plowline_core.event.compressed import (
    Compression,
    CorruptBatch,
    OversizedRecord,
    Record,
    compression_of,
    read_batch,
    write_batch,
)

pytestmark = pytest.mark.unit

LIMIT = 1000
BOTH = [pytest.param(Compression.GZIP, id="gzip"), pytest.param(Compression.ZSTD, id="zstd")]


def _body(records: list[bytes], version: int = 1, payload_version: int = 1) -> bytes:
    parts = [bytes((version, payload_version))]
    parts += [len(record).to_bytes(4, "big") + record for record in records]
    return b"".join(parts)


def _compress(body: bytes, compression: Compression) -> bytes:
    if compression is Compression.GZIP:
        return gzip.compress(body)
    return zstandard.ZstdCompressor().compress(body)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param(b"\x1f\x8b\x08\x00", Compression.GZIP, id="gzip"),
        pytest.param(b"\x28\xb5\x2f\xfd\x00", Compression.ZSTD, id="zstd"),
        pytest.param(b"app\tweb\t", None, id="tsv-line"),
        pytest.param(b"\x1f", None, id="half-gzip-signature"),
        pytest.param(b"\x28\xb5\x2f", None, id="three-quarters-zstd-signature"),
        pytest.param(b"", None, id="empty"),
    ],
)
def test_a_batch_is_recognised_by_its_signature(data: bytes, expected: Compression | None) -> None:
    """A message is a compressed batch exactly when it starts with gzip's or zstd's signature."""
    assert expected == compression_of(data)


@pytest.mark.parametrize("compression", BOTH)
def test_records_are_read_in_order(compression: Compression) -> None:
    """A batch made by another writer (the stdlib, zstandard) yields its records in order."""
    records = [b"first\tline", b"", b"third"]

    items = list(read_batch(_compress(_body(records), compression), compression, LIMIT))

    assert [Record(record) for record in records] == items


@pytest.mark.parametrize("compression", BOTH)
def test_an_oversized_record_is_skipped_and_the_rest_read(compression: Compression) -> None:
    """A record over the limit is one OversizedRecord in its place; the records after it load."""
    data = _compress(_body([b"a", b"x" * (LIMIT + 1), b"b"]), compression)

    items = list(read_batch(data, compression, LIMIT))

    assert [Record(b"a"), OversizedRecord(LIMIT + 1, compression, LIMIT), Record(b"b")] == items


def test_an_oversized_record_says_what_2x_says() -> None:
    """The size violation's expectation names the limit and the compression, in 2.x's words."""
    expected = "Payload will exceed maximum allowed size of 1000 after zstd decompression"
    assert expected == OversizedRecord(1001, Compression.ZSTD, 1000).expectation


@pytest.mark.parametrize("compression", BOTH)
@pytest.mark.parametrize(
    ("body", "named"),
    [
        pytest.param(_body([b"a"], version=2), "2, 1", id="version-2"),
        pytest.param(_body([b"a"], version=0, payload_version=7), "0, 7", id="version-0"),
        pytest.param(b"\x05", "5, -1", id="one-byte"),
        pytest.param(b"", "-1, -1", id="empty"),
    ],
)
def test_an_unknown_format_version_is_one_failure_naming_both(
    compression: Compression, body: bytes, named: str
) -> None:
    """A format version other than 1 makes the whole batch one failure naming both header bytes."""
    items = list(read_batch(_compress(body, compression), compression, LIMIT))

    expected = f"unsupported versions in {compression}-compressed record header: {named}"
    assert [CorruptBatch(expected)] == items


@pytest.mark.parametrize("compression", BOTH)
def test_a_corrupt_stream_is_one_failure_after_the_records_read(compression: Compression) -> None:
    """Bytes that do not decompress end the batch with one CorruptBatch."""
    data = _compress(_body([b"a", b"b"]), compression)
    damaged = data[: len(compression.signature)] + bytes(b ^ 0x5A for b in data[4:])

    items = list(read_batch(damaged, compression, LIMIT))

    assert CorruptBatch(f"corrupt {compression}-compressed payload") == items[-1]
    assert all(isinstance(item, Record) for item in items[:-1])


@pytest.mark.parametrize("compression", BOTH)
def test_a_stream_ending_inside_a_record_is_corrupt(compression: Compression) -> None:
    """A length prefix promising more than the stream holds is a corrupt batch (truncated)."""
    body = _body([b"a"]) + (500).to_bytes(4, "big") + b"short"

    items = list(read_batch(_compress(body, compression), compression, LIMIT))

    assert [Record(b"a"), CorruptBatch(f"corrupt {compression}-compressed payload")] == items


@pytest.mark.parametrize("compression", BOTH)
def test_a_stream_ending_inside_a_skipped_record_is_corrupt(compression: Compression) -> None:
    """An oversized record the stream cannot hold is a truncation, not a size violation."""
    body = _body([b"a"]) + (LIMIT * 50).to_bytes(4, "big") + b"short"

    items = list(read_batch(_compress(body, compression), compression, LIMIT))

    assert [Record(b"a"), CorruptBatch(f"corrupt {compression}-compressed payload")] == items


@pytest.mark.parametrize("compression", BOTH)
def test_bytes_after_the_batch_are_corrupt(compression: Compression) -> None:
    """Trailing bytes that start no other member or frame make the batch corrupt."""
    data = write_batch([b"a"], compression) + b"trailing"

    assert isinstance(list(read_batch(data, compression, LIMIT))[-1], CorruptBatch)


def test_gzip_members_read_as_one_stream() -> None:
    """A batch split over two gzip members reads as one stream (as Java's GZIPInputStream does)."""
    body = _body([b"first", b"second"])
    data = gzip.compress(body[:7]) + gzip.compress(body[7:])

    assert [Record(b"first"), Record(b"second")] == list(read_batch(data, Compression.GZIP, LIMIT))


def test_a_highly_compressible_record_is_held_in_slices() -> None:
    """A record of 5 MB of one byte (~5 KB of gzip) decompresses to exactly its bytes."""
    record = b"x" * 5_000_000
    compressor = zlib.compressobj(wbits=31)
    data = compressor.compress(_body([record])) + compressor.flush()

    assert [Record(record)] == list(read_batch(data, Compression.GZIP, 10_000_000))


_RECORDS = st.lists(st.binary(max_size=300), max_size=30)


@settings(max_examples=150)
@given(records=_RECORDS, compression=st.sampled_from(Compression))
def test_any_list_of_records_round_trips(records: list[bytes], compression: Compression) -> None:
    """Whatever the records, a batch written by ``write_batch`` reads back as exactly them."""
    data = write_batch(records, compression)

    assert compression_of(data) is compression
    assert [Record(record) for record in records] == list(read_batch(data, compression, 300))


@settings(max_examples=150)
@given(data=st.data(), records=_RECORDS, compression=st.sampled_from(Compression))
def test_any_truncation_is_one_corrupt_batch_last(
    data: st.DataObject, records: list[bytes], compression: Compression
) -> None:
    """A batch cut anywhere after its signature yields a prefix of its records, then one failure."""
    whole = write_batch(records, compression)
    cut = data.draw(st.integers(len(compression.signature), len(whole) - 1))

    items = list(read_batch(whole[:cut], compression, 300))

    read = [item for item in items if isinstance(item, Record)]
    assert isinstance(items[-1], CorruptBatch)
    assert sum(isinstance(item, CorruptBatch) for item in items) == 1
    assert [Record(record) for record in records[: len(read)]] == read


@settings(max_examples=150)
@given(garbage=st.binary(max_size=200), compression=st.sampled_from(Compression))
def test_any_bytes_after_a_signature_never_raise(garbage: bytes, compression: Compression) -> None:
    """Arbitrary bytes behind a signature end in at most one failure, never in an exception."""
    items = list(read_batch(compression.signature + garbage, compression, 300))

    assert sum(isinstance(item, CorruptBatch) for item in items) <= 1
