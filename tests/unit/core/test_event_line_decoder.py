"""The C line decoder answers exactly as its pure-Python reference, on any text."""

from __future__ import annotations

import tracemalloc
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from plowline_core.event import _line_decoder, atomic
from plowline_core.event.atomic import (
    NATIVE,
    ValidLine,
    decode_valid_line,
    decode_valid_line_python,
    native_fields,
)
from plowline_core.event.fields import ENRICHED_FIELDS, FIELD_COUNT, Kind
from plowline_core.testing.tsv import enriched_fields, enriched_line

_ATOMIC = [field for field in ENRICHED_FIELDS if not field.is_entity]
_TYPED = [field for field in _ATOMIC if field.kind is not Kind.STRING]

# Texts at or just past the edges of each kind's shape (values.py), and of what int() and
# float() take within it.
_EDGES: dict[Kind, list[str]] = {
    Kind.TIMESTAMP: [
        "2024-02-29 10:00:00",
        "2023-02-29 10:00:00",
        "1900-02-29 00:00:00",
        "2000-02-29 00:00:00",
        "0000-02-29 00:00:00",
        "2024-04-31 00:00:00",
        "2024-12-31 23:59:59.999",
        "2024-13-01 00:00:00",
        "2024-00-10 00:00:00",
        "2024-01-00 00:00:00",
        "2024-01-01 24:00:00",
        "2024-01-01 23:60:00",
        "2024-01-01 23:59:60",
        "2024-01-01 10:00:00.000",
        "2024-01-01 10:00:00.100",
        "2024-01-01 10:00:00.00",
        "2024-01-01 10:00:00.0000",
        "2024-01-01T10:00:00",
        "2024-01-01 10:00:00Z",
        "2024-1-01 10:00:00",
        "\uff12024-01-01 10:00:00",
        "2024-01-01 10:00:00,000",
    ],
    Kind.UUID: [
        "c6ef3124-b53a-4b13-a233-0088f79dcbcb",
        "C6EF3124-B53A-4B13-A233-0088F79DCBCB",
        "c6ef3124-b53a-4b13-a233-0088f79dcbc",
        "c6ef3124-b53a-4b13-a233-0088f79dcbcbb",
        "c6ef3124b53a-4b13-a233-0088f79dcbcb-",
        "g6ef3124-b53a-4b13-a233-0088f79dcbcb",
        "c6ef3124-b53a-4b13-a233-0088f79dcbc\u00e9",
        "1-1-1-1-1",
    ],
    Kind.INT: [
        "0",
        "-0",
        "+7",
        "007",
        "123456789",
        "-12345678",
        "1234567890",
        "+",
        "-",
        "1-2",
        "--1",
        "+-1",
        "1+",
        "\u0661\u0662",
        "\uff11",
        " 1",
        "1_0",
        "",
    ],
    Kind.DOUBLE: [
        "1",
        "-0",
        "1.",
        ".5",
        "-.5",
        "+.5",
        "1e5",
        "1E5",
        "1e+5",
        "1e-5",
        "1e99",
        "1e100",
        "1e-999",
        "1e-1000",
        "1e+100",
        "e5",
        ".",
        "..",
        "1..2",
        "1.2.3",
        "1e5e5",
        "1-2",
        "+-1",
        "1e",
        "1e+",
        "1e-",
        "NaN",
        "Infinity",
        "inf",
        "0x1p3",
        "\u0661",
        "1" * 200,
        "1" * 201,
        "1" * 200 + "e5",
        "9" * 200 + "e99",
        "1_0",
        "1.5f",
    ],
    Kind.BOOLEAN: ["0", "1", "2", "00", "t", "true", "\u0661"],
}


def _items(valid: ValidLine | None) -> Any:
    """Everything that must agree: keys in order, value types and values, entity texts."""
    if valid is None:
        return None
    values, *texts = valid
    return [(key, type(value), value) for key, value in values.items()], texts


def _agree(line: str) -> None:
    assert _items(decode_valid_line(line)) == _items(decode_valid_line_python(line)), line


def test_the_package_build_made_the_extension() -> None:
    """The installed package decodes lines in C (a silent fallback would only be slower)."""
    assert NATIVE
    assert isinstance(atomic.decode_valid_line.__self__, _line_decoder.LineDecoder)  # type: ignore[attr-defined]


@pytest.mark.parametrize("field", _TYPED, ids=lambda field: field.name)
def test_every_edge_text_of_every_typed_field_is_decoded_as_the_reference_does(
    field: Any,
) -> None:
    """Each edge text of the field's kind, alone on a line, gets the reference's answer."""
    for text in _EDGES[field.kind]:
        _agree(enriched_line(**{field.name: text}))


@settings(max_examples=500, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from([field.name for field in _ATOMIC]),
        st.one_of(
            st.none(),
            st.text(st.characters(blacklist_characters="\t", blacklist_categories=("Cs",))),
            st.sampled_from([text for texts in _EDGES.values() for text in texts]),
        ),
        max_size=12,
    )
)
def test_lines_with_any_field_texts_are_decoded_as_the_reference_does(
    overrides: dict[str, str | None],
) -> None:
    """Whatever text sits in any atomic field, C and reference agree (values and order)."""
    _agree(enriched_line(**overrides))


@settings(max_examples=300, deadline=None)
@given(st.text(st.sampled_from("\tab1-:. é€😀\n")), st.integers(0, FIELD_COUNT + 2))
def test_any_text_with_any_number_of_fields_is_decoded_as_the_reference_does(
    text: str, tabs: int
) -> None:
    """Arbitrary texts, and texts of 129 to 133 fields, never crash and agree."""
    _agree(text)
    _agree("\t".join([text] * tabs))


@pytest.mark.parametrize(
    ("title", "kind"), [("caf\u00e9", "latin-1"), ("\u20ac", "UCS-2"), ("\U0001f600", "UCS-4")]
)
def test_lines_in_every_string_storage_decode_as_the_reference_does(title: str, kind: str) -> None:
    """A non-ASCII page title (1, 2 or 4 bytes per character in CPython) is kept as is."""
    line = enriched_line(page_title=title, contexts=[], unstruct_event=None)
    decoded = decode_valid_line(line)
    assert decoded is not None, kind
    assert decoded[0]["page_title"] == title
    _agree(line)
    _agree(enriched_line(page_title=title, txn_id="\u0661"))  # an Arabic-Indic digit


def test_the_entity_texts_come_back_in_tsv_order() -> None:
    """contexts, unstruct_event and derived_contexts texts are returned as they are."""
    values = enriched_fields()
    values[52], values[58], values[122] = "C", "U", "D"
    decoded = decode_valid_line("\t".join(values))
    assert decoded is not None
    assert decoded[1:] == ("C", "U", "D")


def test_a_decoder_refuses_a_field_table_it_cannot_hold() -> None:
    """Bad field tables fail at construction with a message naming the problem."""
    with pytest.raises(ValueError, match="unknown kind 9"):
        _line_decoder.LineDecoder([("a", 9, False)])
    with pytest.raises(ValueError, match="1 to 256 fields"):
        _line_decoder.LineDecoder([("a", 0, False)] * 300)
    with pytest.raises(TypeError, match="not a \\(name, kind, required\\) tuple"):
        _line_decoder.LineDecoder(["a"])


def test_decoding_a_non_text_is_a_type_error() -> None:
    """Bytes are not decoded by accident."""
    decoder = _line_decoder.LineDecoder(native_fields())
    with pytest.raises(TypeError, match="takes a str, not bytes"):
        decoder.decode(b"\t" * (FIELD_COUNT - 1))


def test_decoding_holds_no_memory_per_line() -> None:
    """A hundred thousand lines, valid and not, leave allocated memory where it was."""
    lines = [
        enriched_line(page_title="caf\u00e9", txn_id="12", se_value="2.5"),
        enriched_line(page_title="\u20ac", collector_tstamp="yesterday"),
        enriched_line() + "\textra",
        enriched_line(event_id="C6EF3124-B53A-4B13-A233-0088F79DCBCB", br_cookies="1"),
    ]
    for line in lines * 1000:  # warm every path
        decode_valid_line(line)
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for _ in range(25_000):
        for line in lines:
            decode_valid_line(line)
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert after - before < 64 * 1024
