"""Where a bad row is filed in the bucket, how an object's bytes are made and read back.

Object names (relative to the bucket path)::

    <vendor>.<name>/jsonschema-<model>/YYYY/MM/DD/HH/<window start>-<unique>.ndjson[.gz]
    unparseable/YYYY/MM/DD/HH/<publish time>-<message id>.bin

where ``<window start>`` and ``<publish time>`` are ISO 8601 basic (``20261122T051300Z``)
and the hour path is theirs. An unparseable message's object is named after the message
alone (publish time and id are the same on every delivery), so a redelivered copy maps to
the object already written instead of a second one. A name's hour folder and stamp say
when it was written, at most a window earlier (an unparseable object's: when its message
was published, earlier still), so the objects of the last minutes are found by listing a
few hour folders (``hour_folders``, ``stamp_of``; see ``lookback``).

A bad row may come from anyone who can publish to the topic, and Iglu sets no length on a
vendor or name: a partition folder longer than ``PARTITION_MAX_BYTES`` is shortened to its
first characters, ``~`` and 32 hex digits of its SHA-256 (``~`` is in no Iglu name, so a
shortened folder is never another's real one; the digest keeps it unique and the same on
every delivery). Every object name then stays far under GCS's limit of 1,024 bytes,
which refused the name of a 1 KB vendor: its rows were nacked for ever while the service
stayed healthy. A name is bounded, whatever a publisher puts in a bad row.

Notes:
    Pure. Bad rows are stored as received (a message is never re-encoded; only a trailing
    newline is dropped), so a bad row in the bucket is byte-for-byte the one published.
    A bad row goes into NDJSON only when it is one line: after its one trailing ``\n`` is
    dropped it holds no ``\n`` nor ``\r`` (readers split lines on both). Anything else
    (not JSON, or JSON spread over several lines) is ``unparseable`` and gets an object of
    its own whose content is exactly the message, never compressed: no separator can be
    confused with the message's own bytes, and such messages are rare.
"""

from __future__ import annotations

import gzip as gzip_module
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from hashlib import sha256

from plowline_core.badrows import parse_bad_row

_HOUR = "%Y/%m/%d/%H"
_STAMP = "%Y%m%dT%H%M%SZ"
_STAMP_CHARS = len("20261122T051300Z")


UNPARSEABLE = "unparseable"
"""The partition of messages that are not self-describing JSON."""

PARTITION_MAX_BYTES = 320
"""The longest partition folder kept as it is (``vendor.name`` at most 256, the rest 64)."""
_PART_MAX = (256, 63)  # ``vendor.name``, ``format-model``: 256 + 1 + 63 = 320
_DIGEST_CHARS = 32

UNPARSEABLE_CONTENT_TYPE = "application/octet-stream"
"""The content type of an unparseable message's object (its bytes as they came)."""


def partition_of(data: bytes) -> str:
    """Return the partition of a message: ``vendor.name/jsonschema-model`` or ``unparseable``."""
    line = data.removesuffix(b"\n")
    if b"\n" in line or b"\r" in line:
        return UNPARSEABLE  # not one NDJSON line: kept whole in an object of its own
    parsed = parse_bad_row(data)
    if parsed is None:
        return UNPARSEABLE
    key, _ = parsed
    kind = _shorten(f"{key.vendor}.{key.name}", _PART_MAX[0])
    return f"{kind}/{_shorten(f'{key.format}-{key.version.model}', _PART_MAX[1])}"


def _shorten(part: str, limit: int) -> str:
    """Return ``part``, or its head, ``~`` and a digest of it when longer than ``limit``."""
    if len(part.encode()) <= limit:
        return part
    digest = sha256(part.encode()).hexdigest()[:_DIGEST_CHARS]
    return f"{part[: limit - _DIGEST_CHARS - 1]}~{digest}"


def object_name(partition: str, window_start: datetime, unique: str, gzip: bool) -> str:
    """Return the object name of one batch of a partition."""
    suffix = ".ndjson.gz" if gzip else ".ndjson"
    return f"{partition}/{_stem(window_start, unique)}{suffix}"


def unparseable_name(published: datetime, message_id: str) -> str:
    """Return the object name of one unparseable message: the same on every delivery of it."""
    safe = "".join(c if c.isascii() and (c.isalnum() or c in "-_.") else "_" for c in message_id)
    return f"{UNPARSEABLE}/{_stem(published.astimezone(UTC), safe)}.bin"


def _stem(window_start: datetime, unique: str) -> str:
    hour = window_start.strftime(_HOUR)
    stamp = window_start.strftime(_STAMP)
    return f"{hour}/{stamp}-{unique}"


def hour_folders(since: datetime, until: datetime) -> list[str]:
    """Return the hour folders (``YYYY/MM/DD/HH/``) of every hour from ``since``'s to ``until``'s."""
    hour = since.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    out = []
    while hour <= until:
        out.append(hour.strftime(_HOUR) + "/")
        hour += timedelta(hours=1)
    return out


def stamp_of(name: str) -> datetime | None:
    """Return the time an object's name carries (window start or publish time), else None."""
    base = name.rsplit("/", 1)[-1]
    try:
        return datetime.strptime(base[:_STAMP_CHARS], _STAMP).replace(tzinfo=UTC)
    except ValueError:
        return None  # not one of ours: no stamp, never recalled


def encode_lines(lines: Sequence[bytes], gzip: bool) -> bytes:
    """Join one-line messages into NDJSON (newline-terminated), gzip-compressed if asked."""
    body = b"".join(line.removesuffix(b"\n") + b"\n" for line in lines)
    return gzip_module.compress(body, mtime=0) if gzip else body


def object_lines(name: str, body: bytes) -> list[bytes]:
    """Return the bad rows an object holds: the inverse of ``encode_lines``, one for ``.bin``.

    Raises:
        gzip.BadGzipFile, EOFError, zlib.error: a ``.gz`` object that is not whole gzip.
    """
    if name.endswith(".bin"):
        return [body]
    text = gzip_module.decompress(body) if name.endswith(".gz") else body
    return text.removesuffix(b"\n").split(b"\n") if text else []


def content_type(gzip: bool) -> str:
    """Return the content type of an object."""
    return "application/gzip" if gzip else "application/x-ndjson"
