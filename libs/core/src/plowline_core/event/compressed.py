"""Snowplow's compressed batches of enriched events: recognise one, read its records, make one.

A message is a compressed batch when it starts with a compression signature (anything
else is one enriched TSV line). Decompressed, a batch is::

    batch    := format_version:u8  payload_version:u8  record*
    record   := length:u32 (big-endian)  bytes[length]        one enriched TSV line

    gzip     starts 1f 8b          (RFC 1952; members may follow one another)
    zstd     starts 28 b5 2f fd    (RFC 8878 frame magic; frames may follow one another)

``format_version`` must be 1; the payload version is the producer's own and is not read.
This is the layout of Snowplow common-streams' ``compression`` package, which the 2.x
loaders read since 2.2.0.

``read_batch`` yields, in order, one item per record and at most one ``CorruptBatch``,
always last:

    Record           a record of at most ``max_record_bytes``
    OversizedRecord  a record over ``max_record_bytes``: skipped unread, the rest still read
    CorruptBatch     an unknown format version (nothing is read), or a stream that is
                     corrupt or truncated (the records before it were yielded)

Notes:
    Pure, and streaming: the compressed input is fed to the decompressor ``_SLICE`` bytes
    at a time and the records are cut from its output as it comes, so what is held at
    once is one record plus one slice's output (at most ~1 MiB for gzip and ~32 MiB for
    zstd's most extreme ratio), never the whole batch; an oversized record is skipped
    without being held. Nothing raises on any input: every failure is a ``CorruptBatch``.
    Stricter than common-streams, so that every truncation is seen: a stream that ends
    inside a record being skipped, or inside a gzip member or a zstd frame (the python
    decompressors, unlike Java's streams, end silently there), is corrupt; so are bytes
    after the last member or frame that do not start another.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol, TypeAlias

import zstandard

__all__ = [
    "BATCH_VERSION_PREFIX",
    "FORMAT_VERSION",
    "BatchItem",
    "Compression",
    "CorruptBatch",
    "OversizedRecord",
    "Record",
    "compression_of",
    "read_batch",
    "write_batch",
]

FORMAT_VERSION = 1
"""The only compression format version there is (the header's first byte)."""

BATCH_VERSION_PREFIX = "unsupported versions in "
"""How the failure of a batch of an unknown format version starts (common-streams' words)."""

_SLICE = 1024  # compressed bytes fed to the decompressor per call (bounds its output)
_LENGTH_BYTES = 4


class Compression(StrEnum):
    """A compression a batch may use, named as common-streams names it in its failures."""

    GZIP = "gzip"
    ZSTD = "zstd"

    @property
    def signature(self) -> bytes:
        """The bytes a message compressed this way starts with."""
        return _SIGNATURES[self]


_SIGNATURES = {Compression.GZIP: b"\x1f\x8b", Compression.ZSTD: b"\x28\xb5\x2f\xfd"}


@dataclass(frozen=True, slots=True)
class Record:
    """One record of a batch: an enriched TSV line."""

    data: bytes


@dataclass(frozen=True, slots=True)
class OversizedRecord:
    """A record longer than the limit: its size, what it was compressed with, the limit."""

    size: int
    compression: Compression
    limit: int

    @property
    def expectation(self) -> str:
        """The size violation's expectation, in 2.x's words."""
        return (
            f"Payload will exceed maximum allowed size of {self.limit} after "
            f"{self.compression} decompression"
        )


@dataclass(frozen=True, slots=True)
class CorruptBatch:
    """A batch that cannot be read (further): ``message`` says why, in 2.x's words."""

    message: str


BatchItem: TypeAlias = Record | OversizedRecord | CorruptBatch


def compression_of(data: bytes) -> Compression | None:
    """Return the compression ``data`` starts with, or None for an uncompressed line."""
    if data.startswith(_SIGNATURES[Compression.ZSTD]):
        return Compression.ZSTD
    if data.startswith(_SIGNATURES[Compression.GZIP]):
        return Compression.GZIP
    return None


def read_batch(data: bytes, compression: Compression, max_record_bytes: int) -> Iterator[BatchItem]:
    """Yield the records of a compressed batch, the oversized ones and any corruption, in order.

    Notes:
        The version failure names both header bytes, -1 for one the stream lacks (as
        common-streams does).
    """
    stream = _Stream(_decompressed(data, compression))
    try:
        header = stream.read(2)
        versions = [*header, -1, -1][:2]
        if versions[0] != FORMAT_VERSION:
            yield CorruptBatch(
                f"{BATCH_VERSION_PREFIX}{compression}-compressed record header: "
                f"{versions[0]}, {versions[1]}"
            )
            return
        while prefix := stream.read(_LENGTH_BYTES):
            if len(prefix) < _LENGTH_BYTES:
                raise _Corrupt
            size = int.from_bytes(prefix, "big")
            if size > max_record_bytes:
                if stream.skip(size) < size:
                    raise _Corrupt
                yield OversizedRecord(size, compression, max_record_bytes)
                continue
            record = stream.read(size)
            if len(record) < size:
                raise _Corrupt
            yield Record(record)
    except (_Corrupt, zlib.error, zstandard.ZstdError):
        yield CorruptBatch(f"corrupt {compression}-compressed payload")


def write_batch(
    records: Iterable[bytes], compression: Compression, payload_version: int = 1
) -> bytes:
    """Return ``records`` as one compressed batch (what enrich emits; tests and the devstack)."""
    body = bytearray((FORMAT_VERSION, payload_version))
    for record in records:
        body += len(record).to_bytes(_LENGTH_BYTES, "big") + record
    if compression is Compression.GZIP:
        compressor = zlib.compressobj(wbits=31)
        return compressor.compress(bytes(body)) + compressor.flush()
    return zstandard.ZstdCompressor().compress(bytes(body))


class _Corrupt(Exception):
    """The stream is corrupt or truncated (internal: ``read_batch`` yields it)."""


class _Decoder(Protocol):
    """What zlib's and zstandard's decompression objects share."""

    @property
    def eof(self) -> bool: ...

    @property
    def unused_data(self) -> bytes: ...

    def decompress(self, data: bytes) -> bytes: ...


def _decoder(compression: Compression) -> _Decoder:
    if compression is Compression.GZIP:
        return zlib.decompressobj(wbits=31)  # 16 + 15: a gzip header and trailer
    decoder: _Decoder = zstandard.ZstdDecompressor().decompressobj()
    return decoder


def _decompressed(data: bytes, compression: Compression) -> Iterator[bytes]:
    """Yield the decompressed bytes of every member (gzip) or frame (zstd), slice by slice.

    Raises:
        _Corrupt: the input ends inside a member or frame, or goes on with something else.
    """
    signature = compression.signature
    rest = data
    while rest:
        if not rest.startswith(signature):
            raise _Corrupt
        decoder = _decoder(compression)
        offset = 0
        while not decoder.eof:
            if offset >= len(rest):
                raise _Corrupt
            piece = decoder.decompress(rest[offset : offset + _SLICE])
            offset += _SLICE
            if piece:
                yield piece
        rest = decoder.unused_data + rest[offset:]


class _Stream:
    """Read exact amounts from a stream of pieces, holding at most one read plus one piece."""

    def __init__(self, pieces: Iterator[bytes]) -> None:
        self._pieces = pieces
        self._buffer = b""
        self._at = 0

    def read(self, size: int) -> bytes:
        """Return the next ``size`` bytes, or fewer where the stream ends."""
        held = self._buffer[self._at :]
        parts = [held]
        count = len(held)
        while count < size:
            piece = next(self._pieces, None)
            if piece is None:
                break
            parts.append(piece)
            count += len(piece)
        joined = b"".join(parts) if len(parts) > 1 else held
        self._buffer, self._at = joined, size
        return joined[:size]

    def skip(self, size: int) -> int:
        """Pass over the next ``size`` bytes without holding them; return how many there were."""
        held = len(self._buffer) - self._at
        if held >= size:
            self._at += size
            return size
        skipped = held
        self._buffer, self._at = b"", 0
        for piece in self._pieces:
            if skipped + len(piece) >= size:
                self._buffer, self._at = piece, size - skipped
                return size
            skipped += len(piece)
        return skipped
