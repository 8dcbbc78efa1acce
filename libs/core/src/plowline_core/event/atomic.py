"""Decode the atomic values of a line that enrich wrote, without looking at each field twice.

``decode_valid_atomic`` answers for lines whose values all have the shapes of
:mod:`plowline_core.event.values`; anything else is None, for the parser's field-by-field
decoder to explain.

Notes:
    Pure: the only state is a bounded table of compiled decoders, one per *line shape* (the
    positions of the non-empty fields), which never changes what is returned. A shape's
    decoder is straight-line code (``exec``, as in ``transform.codegen``): one regex over
    only that shape's non-empty typed texts, no optional groups, and the dict written as
    one literal in TSV order with each conversion inline. Lines of a shape not compiled
    (the table is full) take the general decoder, C-level zips over all 131 positions.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from itertools import compress
from operator import call, itemgetter
from typing import Any

from plowline_core.event.fields import (
    CONTEXTS_AT,
    DERIVED_CONTEXTS_AT,
    ENRICHED_FIELDS,
    FIELD_COUNT,
    UNSTRUCT_EVENT_AT,
    Kind,
)
from plowline_core.event.values import (
    BOOLEAN_SHAPE,
    BOOLEANS,
    DOUBLE_SHAPE,
    INT_SHAPE,
    TIMESTAMP_SHAPE,
    UUID_SHAPE,
    iso_timestamps,
)

AtomicDecoder = Callable[[list[str]], "dict[str, Any] | None"]
"""A decoder of the atomic values of a line's 131 fields (None: look closer)."""

ValidLine = tuple[dict[str, Any], str, str, str]
"""A line's atomic values, then its contexts, unstruct_event and derived_contexts texts."""

SHAPES_CAP = 512
"""Line shapes given a compiled decoder; lines of other shapes take the general decoder."""

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
_POSITIONS = tuple(range(FIELD_COUNT))
_ATOMIC = tuple(field for field in ENRICHED_FIELDS if not field.is_entity)
_REQUIRED_AT = frozenset(field.index - 1 for field in _ATOMIC if field.required)
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

# How a shape decoder writes the value of a non-empty field at ``v[i]``; timestamps are
# ``t[k]``, the k-th of the line's converted timestamps.
_INLINE = {
    Kind.STRING: "v[{i}]",
    Kind.UUID: "v[{i}].lower()",
    Kind.INT: "_int(v[{i}])",
    Kind.DOUBLE: "_float(v[{i}])",
    Kind.BOOLEAN: "_bool[v[{i}]]",  # KeyError for any text but "0" and "1"
}

_decoders: dict[tuple[int, ...], AtomicDecoder] = {}


def decode_valid_line_python(line: str) -> ValidLine | None:
    """Return the atomic values and entity texts of a line valid as enrich writes it, or None.

    Notes:
        None, without raising, for a line of another field count or one that
        ``decode_valid_atomic`` leaves to the parser. The entity texts are not looked at.
    """
    values = line.split("\t")
    if len(values) != FIELD_COUNT:
        return None
    atomic = decode_valid_atomic(values)
    if atomic is None:
        return None
    return atomic, values[CONTEXTS_AT], values[UNSTRUCT_EVENT_AT], values[DERIVED_CONTEXTS_AT]


def decode_valid_atomic(values: list[str]) -> dict[str, Any] | None:
    """Return the atomic values of a line's 131 fields when all are valid as enrich writes them.

    Notes:
        Returns None, without raising, when anything needs a closer look: an empty required
        field, a value outside the shapes of ``values`` (even one the SDK accepts). The
        result then equals ``parse(line).atomic``: TSV order, NULLs omitted. The entity
        fields are neither read nor checked. ``values`` is left as it was.
    """
    shape = tuple(compress(_POSITIONS, values))
    decoder = _decoders.get(shape)
    if decoder is None:
        if len(_decoders) >= SHAPES_CAP:
            return decode_any_shape(values)
        decoder = _decoders[shape] = shape_decoder(shape)
    return decoder(values)


def decode_any_shape(values: list[str]) -> dict[str, Any] | None:
    """Return what ``decode_valid_atomic`` returns, by the general decoder (any line shape)."""
    if (
        not all(_REQUIRED_STRINGS(values))
        or _TYPED_SHAPE.fullmatch("\t".join(_TYPED_VALUES(values))) is None
    ):
        return None
    atomic = atomic_texts(values)
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


def atomic_texts(values: list[str]) -> dict[str, Any]:
    """Return every non-empty atomic text of a line by field name, in TSV order."""
    kept = values.copy()  # the entity positions are read as empty
    kept[CONTEXTS_AT] = kept[UNSTRUCT_EVENT_AT] = kept[DERIVED_CONTEXTS_AT] = ""
    return dict(zip(compress(_NAMES, kept), compress(kept, kept), strict=True))


def shape_decoder(shape: tuple[int, ...]) -> AtomicDecoder:
    """Return the decoder of lines whose non-empty fields are exactly those at ``shape``.

    Notes:
        The decoder reads only those positions (entity ones excepted) and answers as
        ``decode_any_shape`` does for such a line.
    """
    if not _REQUIRED_AT.issubset(shape):
        return _none
    fields = [ENRICHED_FIELDS[i] for i in shape if not ENRICHED_FIELDS[i].is_entity]
    checked = [f for f in fields if f.kind in (Kind.TIMESTAMP, Kind.UUID, Kind.INT, Kind.DOUBLE)]
    stamps = [f for f in fields if f.kind is Kind.TIMESTAMP]
    namespace: dict[str, Any] = {
        "_match": _checker(tuple(f.kind for f in checked)),
        "_int": int,
        "_float": float,
        "_bool": BOOLEANS,
    }
    items = []
    for field in fields:
        if field.kind is Kind.TIMESTAMP:
            value = f"t[{stamps.index(field)}]"
        else:
            value = _INLINE[field.kind].format(i=field.index - 1)
        items.append(f"{field.name!r}: {value}")
    source = "\n".join(
        [
            "def decode(v):",
            f"    if _match('\\t'.join(({_reads(checked)}))) is None:",
            "        return None",
            # iso_timestamps, inlined
            f"    t = '\\t'.join(({_reads(stamps)}''))"
            ".replace(' ', 'T').replace('.000\\t', '\\t').replace('\\t', 'Z\\t').split('\\t')",
            "    try:",
            f"        return {{{', '.join(items)}}}",
            "    except (ValueError, KeyError):  # e.g. int('1-2'), a boolean '2'",
            "        return None",
        ]
    )
    exec(source, namespace)  # source built from field names (repr) and positions only
    decoder: AtomicDecoder = namespace["decode"]
    return decoder


def _reads(fields: list[Any]) -> str:
    """Return the tuple items reading each field's text, e.g. ``v[3], v[6], ``."""
    return "".join(f"v[{field.index - 1}], " for field in fields)


@lru_cache(maxsize=256)
def _checker(kinds: tuple[Kind, ...]) -> Callable[[str], re.Match[str] | None]:
    """Return the full match of texts of these kinds joined by TAB (shared by many shapes)."""
    return re.compile("\t".join(_SHAPES[kind] for kind in kinds)).fullmatch


def _none(values: list[str]) -> dict[str, Any] | None:
    """Decode a line of a shape missing a required field: always look closer."""
    return None


# The kind codes of the C decoder, in its order; entity fields are the last code.
NATIVE_KINDS = (Kind.STRING, Kind.UUID, Kind.TIMESTAMP, Kind.INT, Kind.DOUBLE, Kind.BOOLEAN)


def native_fields() -> list[tuple[str, int, bool]]:
    """Return the field table as the C decoder takes it: (name, kind code, required)."""
    return [
        (
            field.name,
            len(NATIVE_KINDS) if field.is_entity else NATIVE_KINDS.index(field.kind),
            field.required,
        )
        for field in ENRICHED_FIELDS
    ]


decode_valid_line: Callable[[str], ValidLine | None]
"""``decode_valid_line_python``, in C when the extension is there."""
try:
    from plowline_core.event._line_decoder import LineDecoder
except ImportError:  # a source tree nobody built: the reference answers, only slower
    NATIVE = False
    decode_valid_line = decode_valid_line_python
else:
    NATIVE = True
    decode_valid_line = LineDecoder(native_fields()).decode
