"""Decode the self-describing JSON fields ``contexts``, ``derived_contexts`` and ``unstruct_event``.

Notes:
    Pure. Failures raise ``EntityError`` whose message follows the analytics SDK 3.x, which
    shows circe 0.14 errors: ``ParsingFailure: …`` for text that is not JSON (the rest of
    that message is orjson's, not jawn's), ``DecodingFailure at <path>: <reason>`` for JSON of
    the wrong shape (reasons ``JsonObject``, ``String``, ``C[A]``, ``schema key is not
    available``, ``data key is not available``, ``INVALID_IGLUURI``, ``INVALID_SCHEMAVER``),
    and ``Unknown payload: <uri>`` for an envelope whose schema is not the expected one.
    Integers beyond 64 bits become floats (orjson), where circe keeps them exact.
    Deviation: a field whose JSON nests deeper than ``MAX_NESTING`` levels is a
    ``ParsingFailure`` (the SDK takes any depth). Every later step then writes the event's
    JSON with one orjson call (it writes 254 levels; a bad row adds 3 around a field), so a
    line nested to the parser's limit costs what a normal bad line costs instead of a walk
    of every level in Python (``bench/hostile.py``).
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from plowline_core.event.model import SelfDescribingData
from plowline_core.iglu.key import SchemaCriterion, SchemaKey

CONTEXTS_CRITERION = SchemaCriterion(
    "com.snowplowanalytics.snowplow", "contexts", "jsonschema", 1, 0
)
"""Envelope accepted for ``contexts`` and ``derived_contexts`` (``1-0-*``)."""

MAX_NESTING = 250
"""The deepest nesting of a self-describing JSON field's text (its envelope included)."""

_PAD = 1024 - MAX_NESTING  # orjson parses 1024 levels
_OPEN_PAD, _CLOSE_PAD = "[" * _PAD, "]" * _PAD
_DEPTH_EXCEEDED = "depth limit exceeded"
_TOO_DEEP = f"ParsingFailure: JSON nested deeper than {MAX_NESTING} levels"

UNSTRUCT_EVENT_CRITERION = SchemaCriterion(
    "com.snowplowanalytics.snowplow", "unstruct_event", "jsonschema", 1, 0
)
"""Envelope accepted for ``unstruct_event`` (``1-0-*``)."""

# iglu-core's URI shape before the SchemaVer is checked: tells INVALID_SCHEMAVER from INVALID_IGLUURI.
_LOOSE_URI = re.compile(
    r"iglu:[a-zA-Z0-9\-_.]+/[a-zA-Z0-9\-_]+/[a-zA-Z0-9\-_]+/[0-9]*-[0-9]*-[0-9]*"
)


class EntityError(ValueError):
    """A self-describing JSON field the SDK would reject; the message is the SDK's."""


def decode_contexts(text: str) -> tuple[SelfDescribingData, ...]:
    """Return the entities of a ``contexts``/``derived_contexts`` field; raise EntityError."""
    envelope = _envelope(text, CONTEXTS_CRITERION)
    if type(envelope) is not list:
        raise EntityError("DecodingFailure at : C[A]")
    return tuple([_entity(item, index) for index, item in enumerate(envelope)])


def decode_unstruct_event(text: str) -> SelfDescribingData:
    """Return the entity of an ``unstruct_event`` field; raise EntityError."""
    return _entity(_envelope(text, UNSTRUCT_EVENT_CRITERION))


def _envelope(text: str, criterion: SchemaCriterion) -> Any:
    envelope = _entity(parse_json(text))
    if not criterion.matches(envelope.schema):
        raise EntityError(f"Unknown payload: {envelope.schema.to_uri()}")
    return envelope.data


def may_nest_too_deep(text: str) -> bool:
    """Return whether JSON ``text`` holds enough brackets to nest deeper than ``MAX_NESTING``."""
    return text.count("[") + text.count("{") > MAX_NESTING


def parse_json(text: str) -> Any:
    """Return the JSON value of ``text``; raise EntityError (``ParsingFailure: …``).

    Notes:
        Text nesting deeper than ``MAX_NESTING`` is refused without being parsed whole:
        text holding that many brackets is parsed inside ``_PAD`` more arrays, so orjson
        stops at its 1024-level limit as soon as the text passes ``MAX_NESTING``. Any
        other failure is reported as a plain parse reports it.
    """
    if may_nest_too_deep(text):
        try:
            padded = orjson.loads(_OPEN_PAD + text + _CLOSE_PAD)
        except orjson.JSONDecodeError as error:
            if str(error).startswith(_DEPTH_EXCEEDED):
                raise EntityError(_TOO_DEEP) from None
        else:
            for _ in range(_PAD):  # one array in each of the others, else not what it seems
                if type(padded) is not list or len(padded) != 1:
                    break
                padded = padded[0]
            else:
                return padded
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as error:
        raise EntityError(f"ParsingFailure: {error}") from None


def _entity(document: Any, index: int | None = None) -> SelfDescribingData:
    # Mirrors iglu-core's circe decoder: object, then "schema" (string, valid URI), then "data".
    if type(document) is dict and type(document.get("schema")) is str and "data" in document:
        try:
            return SelfDescribingData(SchemaKey.parse(document["schema"]), document["data"])
        except ValueError:
            pass
    raise EntityError(_entity_error(document, "" if index is None else f"[{index}]"))


def _entity_error(document: Any, path: str) -> str:
    """Return circe's message for the first problem of a document that is not self-describing."""
    if type(document) is not dict:
        return f"DecodingFailure at {path}: JsonObject"
    if "schema" not in document:
        return f"DecodingFailure at {path}: schema key is not available"
    uri = document["schema"]
    if type(uri) is not str:
        return "DecodingFailure at : String"  # circe decodes it with a fresh cursor
    try:
        SchemaKey.parse(uri)
    except ValueError:
        code = "INVALID_SCHEMAVER" if _LOOSE_URI.fullmatch(uri) else "INVALID_IGLUURI"
        return f"DecodingFailure at {path}: {code}"
    return f"DecodingFailure at {path}: data key is not available"
