"""The atomic decoders compiled per line shape answer as the general decoder and the parser do."""

from __future__ import annotations

from itertools import compress
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from plowline_core.event import atomic
from plowline_core.event.atomic import decode_any_shape, decode_valid_atomic, shape_decoder
from plowline_core.event.fields import ENRICHED_FIELDS, Kind
from plowline_core.event.model import EnrichedEvent
from plowline_core.event.parser import decode_fields, parse
from plowline_core.testing.tsv import enriched_fields, enriched_line

_NO_TAB = st.characters(blacklist_characters="\t", blacklist_categories=("Cs",))
_TEXTS: dict[Kind, st.SearchStrategy[str]] = {
    Kind.STRING: st.text(_NO_TAB, min_size=1, max_size=8),
    Kind.INT: st.integers(-(10**8), 10**8).map(str),
    Kind.DOUBLE: st.floats(-1e6, 1e6).map(repr) | st.sampled_from(["1.000", "-0", "1e5"]),
    Kind.BOOLEAN: st.sampled_from(["0", "1"]),
    Kind.UUID: st.uuids().map(str) | st.uuids().map(lambda u: str(u).upper()),
    Kind.TIMESTAMP: st.sampled_from(
        ["2024-05-01 10:00:00.000", "2024-05-01 10:00:00", "2024-02-29 23:59:59.999"]
    ),
}
# Texts the parser may accept or reject but the fast decoders must leave to it, or convert
# exactly as it does.
_ODD = st.sampled_from(
    ["", " 1", "NaN", "٣", "2147483648", "{}", "x", "+7", "1-2", "-", "1.2.3", "-.5", "2", "true"]
    + ["2023-02-29 00:00:00", "2024-05-01T10:00:00", "2024-05-01 10:00:00.1234"]
)
_ATOMIC = [field for field in ENRICHED_FIELDS if not field.is_entity]


@st.composite
def _values(draw: st.DrawFn) -> list[str]:
    """Return the 131 fields of a valid line of random shape, with maybe one odd text."""
    overrides: dict[str, Any] = {}
    for field in _ATOMIC:
        present = field.required or draw(st.booleans())
        overrides[field.name] = draw(_TEXTS[field.kind]) if present else None
    if draw(st.booleans()):
        odd = draw(st.sampled_from(_ATOMIC))
        overrides[odd.name] = draw(_ODD)
    return enriched_fields(**overrides)


def _shape(values: list[str]) -> tuple[int, ...]:
    return tuple(compress(range(len(values)), values))


@settings(max_examples=300, deadline=None)
@given(_values())
def test_shape_decoder_agrees_with_the_general_decoder(values: list[str]) -> None:
    """The decoder compiled for a line's shape gives what the general decoder gives."""
    assert decode_any_shape(values) == shape_decoder(_shape(values))(values)


@settings(max_examples=300, deadline=None)
@given(_values())
def test_decoded_atomic_values_are_the_parsed_ones_in_tsv_order(values: list[str]) -> None:
    """When the fast decoder answers, its values are those of parse, in the same order."""
    decoded = decode_valid_atomic(values)
    event = parse("\t".join(values))
    if decoded is not None:
        assert isinstance(event, EnrichedEvent)
        assert list(event.atomic.items()) == list(decoded.items())


@settings(max_examples=100, deadline=None)
@given(_values())
def test_decoding_leaves_the_values_as_they_were(values: list[str]) -> None:
    """Neither decoder changes the list of field texts it reads."""
    before = list(values)
    decode_valid_atomic(values)
    decode_any_shape(values)
    assert before == values


def test_a_shape_without_a_required_field_is_never_decoded_fast() -> None:
    """A line lacking event_id is left to the parser, whatever its other values."""
    values = enriched_fields(event_id=None)
    assert shape_decoder(_shape(values))(values) is None
    assert decode_valid_atomic(values) is None


def test_lines_of_new_shapes_take_the_general_decoder_once_the_table_is_full(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With no room for another compiled decoder, an unseen shape is still decoded."""
    values = enriched_fields(txn_id="42", se_value="1.5", br_cookies="0")
    monkeypatch.setattr(atomic, "_decoders", {})
    monkeypatch.setattr(atomic, "SHAPES_CAP", 0)
    assert decode_any_shape(values) == decode_valid_atomic(values)
    assert not atomic._decoders  # nothing compiled


def test_a_typical_line_is_decoded_fast_with_its_values_converted() -> None:
    """Timestamps become ISO instants (no zero fraction), numbers and booleans are typed."""
    values = enriched_fields(
        dvce_sent_tstamp="2024-05-01 10:00:00.000", txn_id="12", se_value="2.5", br_cookies="0"
    )
    decoded = decode_valid_atomic(values)
    assert decoded is not None
    expected = ("2024-05-01T10:00:00Z", 12, 2.5, False)
    actual = tuple(decoded[k] for k in ("dvce_sent_tstamp", "txn_id", "se_value", "br_cookies"))
    assert expected == actual


@settings(max_examples=100, deadline=None)
@given(_values())
def test_decoding_fields_with_known_atomic_values_is_parse(values: list[str]) -> None:
    """Given the fast decoder's atomic values, the exact decoder still gives parse(line)."""
    line = "\t".join(values)
    decoded = decode_valid_atomic(values)
    if decoded is not None:
        assert parse(line) == decode_fields(values, line, atomic=decoded)


def test_an_enrich_line_decodes_fast() -> None:
    """The default enrich line of the test builder takes the fast decoder."""
    assert decode_valid_atomic(enriched_line().split("\t")) is not None
