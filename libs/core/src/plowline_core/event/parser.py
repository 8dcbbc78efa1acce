"""Parse one enriched TSV line into an ``EnrichedEvent`` or a ``ParsingErrorRow``.

Notes:
    Pure, and total: ``parse``/``parse_bytes`` return a value for every input and never
    raise. Rules and messages follow Snowplow's Scala analytics SDK 3.x (``Event.parse``):
    split on TAB keeping trailing empties; one piece is ``NotTSV``, any other count than
    131 is ``FieldNumberMismatch``; otherwise every field is decoded and all failures are
    reported together, in field order, as ``RowDecodingError``.
    Speed: a line is first decoded optimistically (C-level zips over precomputed position
    tables, only non-empty typed fields visited); only when that fails is it decoded again
    field by field to build the precise errors.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from itertools import compress
from operator import call, itemgetter
from typing import Any

from plowline_core.badrows.rows import INVALID_UTF8_PREFIX, ParsingErrorRow
from plowline_core.event.entities import EntityError, decode_contexts, decode_unstruct_event
from plowline_core.event.fields import ENRICHED_FIELDS, FIELD_COUNT, EnrichedField, Kind
from plowline_core.event.model import EnrichedEvent, SelfDescribingData
from plowline_core.event.values import (
    BOOLEAN_SHAPE,
    BOOLEANS,
    DOUBLE_SHAPE,
    INT_SHAPE,
    TIMESTAMP_SHAPE,
    UUID_SHAPE,
    decode_double,
    decode_int,
    decode_timestamp,
    decode_uuid,
    iso_timestamps,
    java_length,
)

_DECODERS: dict[Kind, Callable[[str], Any]] = {
    Kind.UUID: decode_uuid,
    Kind.TIMESTAMP: decode_timestamp,
    Kind.INT: decode_int,
    Kind.DOUBLE: decode_double,
    Kind.BOOLEAN: BOOLEANS.__getitem__,
    Kind.CONTEXTS: decode_contexts,
    Kind.UNSTRUCT_EVENT: decode_unstruct_event,
}
_TARGETS = {
    Kind.UUID: "UUID",
    Kind.TIMESTAMP: "datetime",
    Kind.INT: "integer",
    Kind.DOUBLE: "double",
    Kind.BOOLEAN: "boolean",
}

_SHAPES = {
    Kind.UUID: UUID_SHAPE,
    Kind.TIMESTAMP: TIMESTAMP_SHAPE,
    Kind.INT: INT_SHAPE,
    Kind.DOUBLE: DOUBLE_SHAPE,
    Kind.BOOLEAN: BOOLEAN_SHAPE,
}

_CONVERTERS: dict[Kind, Callable[[str], Any]] = {
    Kind.UUID: str.lower,
    Kind.INT: int,
    Kind.DOUBLE: float,
    Kind.BOOLEAN: "1".__eq__,
}

_NAMES = tuple(field.name for field in ENRICHED_FIELDS)
_ATOMIC = tuple(field for field in ENRICHED_FIELDS if not field.is_entity)
_TYPED = tuple(field for field in _ATOMIC if field.kind is not Kind.STRING)
_TYPED_VALUES = itemgetter(*(field.index - 1 for field in _TYPED))
# One regex over the typed texts joined by TAB checks every one of them in a single C call,
# the required ones (event_id, collector_tstamp) for being there too.
_TYPED_SHAPE = re.compile(
    "\t".join(
        _SHAPES[field.kind] if field.required else f"(?:{_SHAPES[field.kind]})?" for field in _TYPED
    )
)
_REQUIRED_STRINGS = itemgetter(
    *(field.index - 1 for field in _ATOMIC if field.required and field.kind is Kind.STRING)
)
_TIMESTAMPS = tuple(field for field in _TYPED if field.kind is Kind.TIMESTAMP)
_TIMESTAMP_NAMES = tuple(field.name for field in _TIMESTAMPS)
_TIMESTAMP_VALUES = itemgetter(*(field.index - 1 for field in _TIMESTAMPS))
_CONVERTED = tuple(field for field in _TYPED if field.kind is not Kind.TIMESTAMP)
_CONVERTED_NAMES = tuple(field.name for field in _CONVERTED)
_CONVERTED_VALUES = itemgetter(*(field.index - 1 for field in _CONVERTED))
_CONVERTED_BY = tuple(_CONVERTERS[field.kind] for field in _CONVERTED)
_REQUIRED = itemgetter(*(field.index - 1 for field in ENRICHED_FIELDS if field.required))
_LIMITED = tuple(
    field for field in _ATOMIC if field.kind is Kind.STRING and field.max_length is not None
)
_LIMITED_VALUES = itemgetter(*(field.index - 1 for field in _LIMITED))
_LIMITS = tuple(field.max_length or 0 for field in _LIMITED)
_CONTEXTS, _UNSTRUCT_EVENT, _DERIVED_CONTEXTS = (
    next(field.index - 1 for field in ENRICHED_FIELDS if field.name == name)
    for name in ("contexts", "unstruct_event", "derived_contexts")
)


def parse(line: str, *, validate_field_lengths: bool = False) -> EnrichedEvent | ParsingErrorRow:
    """Return the event in one enriched TSV line, or the parsing bad row explaining why not.

    Notes:
        ``validate_field_lengths`` adds the SDK's optional check of string fields against
        their maximum lengths (Java UTF-16 length), off by default as in the SDK.
        The line must not carry its line terminator.
    """
    values = line.split("\t")
    count = len(values)
    if count != FIELD_COUNT:
        failure: dict[str, Any] = (
            {"type": "NotTSV"}
            if count == 1
            else {"type": "FieldNumberMismatch", "fieldCount": count}
        )
        return ParsingErrorRow(failure, line)
    if not validate_field_lengths or not _too_long(values):
        try:
            event = _decode_fast(values)
        except (ValueError, KeyError):
            event = None
        if event is not None:
            return event
    return _decode_slow(values, line, validate_field_lengths)


def parse_bytes(
    data: bytes, *, validate_field_lengths: bool = False
) -> EnrichedEvent | ParsingErrorRow:
    """Return the event in one UTF-8 enriched TSV message, or the parsing bad row."""
    try:
        line = bytes(data).decode("utf-8")
    except UnicodeDecodeError as error:
        bad = bytes(data)[error.start : error.end].hex()
        message = f"{INVALID_UTF8_PREFIX} at byte {error.start} (0x{bad}): {error.reason}"
        failure = {
            "type": "RowDecodingError",
            "errors": [{"type": "UnhandledRowDecodingError", "message": message}],
        }
        return ParsingErrorRow(failure, bytes(data).decode("utf-8", "replace"))
    return parse(line, validate_field_lengths=validate_field_lengths)


def _too_long(values: list[str]) -> bool:
    texts = _LIMITED_VALUES(values)
    return any(
        len(text) > limit or java_length(text) > limit
        for text, limit in zip(texts, _LIMITS, strict=True)
        if len(text) * 2 > limit  # a text within half its limit fits whatever its UTF-16 form
    )


def decode_valid_atomic(values: list[str]) -> dict[str, Any] | None:
    """Return the atomic values of a line's 131 fields when all are valid as enrich writes them.

    Notes:
        Returns None, without raising, when anything needs a closer look: an empty required
        field, a value outside the shapes of ``values`` (even one the SDK accepts). The
        result then equals ``parse(line).atomic``: TSV order, NULLs omitted. The entity
        fields are neither read nor checked. ``values`` is left as it was.
    """
    if (
        not all(_REQUIRED_STRINGS(values))
        or _TYPED_SHAPE.fullmatch("\t".join(_TYPED_VALUES(values))) is None
    ):
        return None
    contexts, unstruct, derived = (
        values[_CONTEXTS],
        values[_UNSTRUCT_EVENT],
        values[_DERIVED_CONTEXTS],
    )
    # Blank the entity fields so one pass over all 131 keeps exactly the non-empty atomic ones.
    values[_CONTEXTS] = values[_UNSTRUCT_EVENT] = values[_DERIVED_CONTEXTS] = ""
    atomic: dict[str, Any] = dict(
        zip(compress(_NAMES, values), compress(values, values), strict=True)
    )
    values[_CONTEXTS], values[_UNSTRUCT_EVENT], values[_DERIVED_CONTEXTS] = (
        contexts,
        unstruct,
        derived,
    )
    # Decoded values replace their texts in place, so the dict keeps TSV order.
    texts = _TIMESTAMP_VALUES(values)
    isos = iso_timestamps(texts)
    atomic.update(zip(compress(_TIMESTAMP_NAMES, texts), compress(isos, texts), strict=True))
    texts = _CONVERTED_VALUES(values)
    converters = compress(_CONVERTED_BY, texts)
    try:
        atomic.update(
            zip(
                compress(_CONVERTED_NAMES, texts),
                map(call, converters, compress(texts, texts)),
                strict=True,
            )
        )
    except ValueError:  # a number of the right characters but the wrong form, e.g. "1-2"
        return None
    return atomic


def _decode_fast(values: list[str]) -> EnrichedEvent | None:
    """Return the event of a valid line; None or an exception when something needs a closer look."""
    atomic = decode_valid_atomic(values)
    if atomic is None:
        return None
    return event_with_entities(values, atomic)


def event_with_entities(values: list[str], atomic: dict[str, Any]) -> EnrichedEvent:
    """Return the event of a line whose atomic values ``decode_valid_atomic`` gave.

    Raises:
        ValueError: an entity field needs the field-by-field decoder to explain it.
        KeyError: likewise.
    """
    contexts, unstruct, derived = (
        values[_CONTEXTS],
        values[_UNSTRUCT_EVENT],
        values[_DERIVED_CONTEXTS],
    )
    return EnrichedEvent(
        atomic,
        decode_contexts(contexts) if contexts else (),
        decode_contexts(derived) if derived else (),
        decode_unstruct_event(unstruct) if unstruct else None,
    )


def _decode_slow(
    values: list[str], line: str, validate_field_lengths: bool
) -> EnrichedEvent | ParsingErrorRow:
    """Decode field by field, collecting every failure in field order."""
    errors: list[dict[str, str]] = []
    decoded: dict[str, Any] = {}
    decoders = _DECODERS
    for field, text in zip(ENRICHED_FIELDS, values, strict=True):
        # Most fields are empty or plain strings: settle those without a decoder call.
        if not text and not field.required:
            continue
        message = _check(field, text, validate_field_lengths)
        if message is None and text:
            decoder = decoders.get(field.kind)
            if decoder is None:
                decoded[field.name] = text
                continue
            try:
                decoded[field.name] = decoder(text)
            except EntityError as error:
                message = str(error)
            except (ValueError, KeyError):
                message = f"Cannot parse key {field.name} into {_TARGETS[field.kind]}"
        if message is not None:
            errors.append(
                {"type": "InvalidValue", "key": field.name, "value": text, "message": message}
            )
    if errors:
        return ParsingErrorRow({"type": "RowDecodingError", "errors": errors}, line)
    return _event(decoded)


def _check(field: EnrichedField, text: str, validate_field_lengths: bool) -> str | None:
    """Return the SDK's message for an empty required or over-long value, else None."""
    limit = field.max_length
    if (
        validate_field_lengths
        and field.kind is Kind.STRING
        and limit is not None
        and java_length(text) > limit
    ):
        return f"Field {field.name} longer than maximum allowed size {limit}"
    if field.required and not text:
        return f"Field {field.name} cannot be empty"
    return None


def _event(decoded: dict[str, Any]) -> EnrichedEvent:
    contexts: tuple[SelfDescribingData, ...] = decoded.pop("contexts", ())
    derived: tuple[SelfDescribingData, ...] = decoded.pop("derived_contexts", ())
    unstruct: SelfDescribingData | None = decoded.pop("unstruct_event", None)
    atomic = {name: value for name, value in decoded.items() if value is not None}
    return EnrichedEvent(atomic, contexts, derived, unstruct)
