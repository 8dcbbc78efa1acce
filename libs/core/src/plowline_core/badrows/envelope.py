"""The self-describing envelope of a bad row: who made it, encoding, and reading it back.

Notes:
    Pure. Encoding is ``plowline_core.badrows.encoding.dumps``: compact JSON that never
    fails, whatever the payload holds (depth, lone surrogates, huge integers: see there).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from plowline_core.badrows.encoding import dumps
from plowline_core.iglu.key import SchemaKey

__all__ = [
    "BADROWS_VENDOR",
    "Processor",
    "badrow_key",
    "dumps",
    "parse_bad_row",
    "self_describing",
]

BADROWS_VENDOR = "com.snowplowanalytics.snowplow.badrows"
"""The Iglu vendor of every Snowplow bad-row schema."""


@dataclass(frozen=True, slots=True)
class Processor:
    """The software that emitted a bad row (``version`` must look like ``1.2.3…``)."""

    artifact: str
    version: str

    def to_dict(self) -> dict[str, str]:
        """Return the ``processor`` object of a bad row."""
        return {"artifact": self.artifact, "version": self.version}


def badrow_key(name: str, version: str) -> SchemaKey:
    """Return the key of the bad-row schema ``name`` at ``version``."""
    return SchemaKey.parse(f"iglu:{BADROWS_VENDOR}/{name}/jsonschema/{version}")


def self_describing(
    schema: SchemaKey, processor: Processor, failure: Any, payload: Any
) -> dict[str, Any]:
    """Return ``{"schema", "data": {"processor", "failure", "payload"}}``."""
    return {
        "schema": schema.to_uri(),
        "data": {"processor": processor.to_dict(), "failure": failure, "payload": payload},
    }


def parse_bad_row(data: bytes) -> tuple[SchemaKey, Mapping[str, Any]] | None:
    """Return the schema key and ``data`` object of a self-describing JSON message, else None.

    Notes:
        Any vendor is accepted (a dead-letter writer files what it is given); None means
        the bytes are not JSON, not an object, or lack a valid ``schema`` URI or an object
        ``data``.
    """
    try:
        document = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(document, dict):
        return None
    uri, body = document.get("schema"), document.get("data")
    if not isinstance(uri, str) or not isinstance(body, dict):
        return None
    try:
        return SchemaKey.parse(uri), body
    except ValueError:
        return None
