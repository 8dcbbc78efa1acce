"""Parse one enriched TSV line into an ``EnrichedEvent`` or a ``ParsingErrorRow``.

Notes:
    Pure, and total: ``parse``/``parse_bytes`` return a value for every input and never
    raise. Rules and messages follow Snowplow's Scala analytics SDK 3.x (``Event.parse``):
    split on TAB keeping trailing empties; one piece is ``NotTSV``, any other count than
    131 is ``FieldNumberMismatch``; otherwise every field is decoded and all failures are
    reported together, in field order, as ``RowDecodingError``.
    Speed: a line is first decoded optimistically (``event.atomic``: straight-line code per
    line shape); only when that fails is it decoded again field by field to build the
    precise errors.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from itertools import compress
from operator import itemgetter
from typing import Any

from plowline_core.badrows.rows import INVALID_UTF8_PREFIX, ParsingErrorRow
from plowline_core.event.atomic import atomic_texts, decode_valid_atomic
from plowline_core.event.entities import EntityError, decode_contexts, decode_unstruct_event
from plowline_core.event.fields import (
    ENRICHED_FIELDS,
    ENTITY_POSITIONS,
    FIELD_COUNT,
    EnrichedField,
    Kind,
)
from plowline_core.event.model import EnrichedEvent, SelfDescribingData
from plowline_core.event.values import (
    BOOLEANS,
    decode_double,
    decode_int,
    decode_timestamp,
    decode_uuid,
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

_DECODER_AT = tuple(_DECODERS.get(field.kind) for field in ENRICHED_FIELDS)
_REQUIRED_AT = frozenset(field.index - 1 for field in ENRICHED_FIELDS if field.required)
_CHECKED_AT = tuple(field.index - 1 for field in ENRICHED_FIELDS if field.kind is not Kind.STRING)
_CHECKED_VALUES = itemgetter(*_CHECKED_AT)
_LIMITED = tuple(
    field for field in ENRICHED_FIELDS if field.kind is Kind.STRING and field.max_length is not None
)
_LIMITED_AT = tuple(field.index - 1 for field in _LIMITED)
_LIMITED_VALUES = itemgetter(*_LIMITED_AT)
_LIMITS = tuple(field.max_length or 0 for field in _LIMITED)
_ENTITY_VALUES = itemgetter(*ENTITY_POSITIONS)


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
        atomic = decode_valid_atomic(values)
        if atomic is not None:
            return decode_fields(values, line, atomic=atomic)
    return decode_fields(values, line, validate_field_lengths)


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


def decode_fields(
    values: list[str],
    line: str,
    validate_field_lengths: bool = False,
    *,
    atomic: dict[str, Any] | None = None,
) -> EnrichedEvent | ParsingErrorRow:
    """Return ``parse(line)`` of a 131-field line, decoding field by field (the exact path).

    Notes:
        ``values`` is ``line.split("\\t")``. Every failure is collected, in field order.
        Only the fields that can fail are looked at one by one: required ones, non-empty
        typed and entity ones, and with ``validate_field_lengths`` non-empty limited strings.
        ``atomic``, the line's ``decode_valid_atomic`` when not None, leaves only the entity
        fields to look at.
    """
    looked_at: Iterable[int]
    if atomic is not None:
        looked_at = compress(ENTITY_POSITIONS, _ENTITY_VALUES(values))
    else:
        positions = _REQUIRED_AT.union(compress(_CHECKED_AT, _CHECKED_VALUES(values)))
        if validate_field_lengths:
            positions = positions.union(compress(_LIMITED_AT, _LIMITED_VALUES(values)))
        looked_at = sorted(positions)
    errors: list[dict[str, str]] = []
    decoded: dict[str, Any] = {}
    for index in looked_at:
        field = ENRICHED_FIELDS[index]
        text = values[index]
        message = None if text and not validate_field_lengths else _check(field, text)
        if message is None:
            decoder = _DECODER_AT[index]
            if decoder is None:  # a valid string: taken with the others below
                continue
            try:
                decoded[field.name] = decoder(text)
                continue
            except EntityError as error:
                message = str(error)
            except (ValueError, KeyError):
                message = f"Cannot parse key {field.name} into {_TARGETS[field.kind]}"
        errors.append(
            {"type": "InvalidValue", "key": field.name, "value": text, "message": message}
        )
    if errors:
        return ParsingErrorRow({"type": "RowDecodingError", "errors": errors}, line)
    return _event(values, decoded, atomic)


def _check(field: EnrichedField, text: str) -> str | None:
    """Return the SDK's message for an empty required or over-long value, else None."""
    limit = field.max_length
    if field.kind is Kind.STRING and limit is not None and java_length(text) > limit:
        return f"Field {field.name} longer than maximum allowed size {limit}"
    if field.required and not text:
        return f"Field {field.name} cannot be empty"
    return None


def _event(
    values: list[str], decoded: dict[str, Any], atomic: dict[str, Any] | None
) -> EnrichedEvent:
    """Return the event of valid values, given the decoded typed and entity ones."""
    contexts: tuple[SelfDescribingData, ...] = decoded.pop("contexts", ())
    derived: tuple[SelfDescribingData, ...] = decoded.pop("derived_contexts", ())
    unstruct: SelfDescribingData | None = decoded.pop("unstruct_event", None)
    if atomic is not None:
        return EnrichedEvent(atomic, contexts, derived, unstruct)
    # Every non-empty atomic text in TSV order, then the decoded values in their slots.
    atomic = atomic_texts(values)
    atomic.update(decoded)
    if None in decoded.values():  # a non-finite double is a NULL
        atomic = {name: value for name, value in atomic.items() if value is not None}
    return EnrichedEvent(atomic, contexts, derived, unstruct)
