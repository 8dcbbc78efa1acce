"""What makes two bad rows one: their bytes, less the moments their failure records.

A bad row delivered twice is the same bytes, except where its producer wrote when it
made it. Snowplow's ``loader_iglu_error`` names when each registry was last asked
(``lookupHistory[].lastAttempt``, and how often: ``attempts``); those come from the
loader's resolver cache, so a restarted loader, asking again, publishes a line's bad row
with other values. Most bad-row schemas stamp ``failure.timestamp`` too (plowline's
``size_violation`` uses the message's publish time, others the clock). So a bad row's
identity is the blake2b-128 of its schema, processor, failure and payload with those
values blanked, in the failure only: the payload, the line that went wrong, counts
whole. Bytes that are not a self-describing JSON object are their own identity.

Notes:
    Pure. One trailing newline never counts: a message, its line in an NDJSON object and
    an unparseable object's content give one identity (``layout``). A JSON bad row is
    compared as JSON (whitespace between tokens does not count), anything else byte
    for byte. Two bad rows that
    differ only in those moments say the same thing about the same line, so they are
    taken for one bad line delivered twice.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

IDENTITY_BYTES = 16
"""blake2b-128: a collision among the bad rows one writer remembers is out of reach."""

MOMENTS = frozenset({"timestamp", "lastAttempt", "attempts"})
"""Keys of a failure whose values say when (and how often) a producer looked, not what."""

MOMENTS_DEPTH = 8
"""How deep in a failure moments are blanked: Snowplow's lie at most 4 levels down
(``failure[].error.lookupHistory[].lastAttempt``); deeper values count as they are, so a
hostile bad row nested a thousand levels deep costs no recursion."""


def identity(data: bytes) -> bytes:
    """Return the identity of a bad row (see the module docstring)."""
    line = data.removesuffix(b"\n")
    document = _document(line)
    if document is None:
        return _digest(b"\x00raw\x00" + line)
    body = document["data"]
    if "failure" in body:
        body = {**body, "failure": _blank(body["failure"], MOMENTS_DEPTH)}
    try:
        return _digest(orjson.dumps({**document, "data": body}))
    except orjson.JSONEncodeError:  # not expected of what orjson read; the bytes then
        return _digest(b"\x00raw\x00" + line)


def _document(line: bytes) -> dict[str, Any] | None:
    """Return the self-describing bad row ``line`` holds, else None."""
    try:
        document = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(document, dict) or not isinstance(document.get("data"), dict):
        return None
    return document


def _blank(value: Any, depth: int) -> Any:
    """Return ``value`` with every ``MOMENTS`` key's value set to None, ``depth`` levels down."""
    if depth <= 0:
        return value
    if isinstance(value, dict):
        return {k: None if k in MOMENTS else _blank(v, depth - 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_blank(item, depth - 1) for item in value]
    return value


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=IDENTITY_BYTES).digest()
