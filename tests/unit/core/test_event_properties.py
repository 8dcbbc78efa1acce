"""Property tests of the enriched TSV parser: total on any input, exact on valid input."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from plowline_core.badrows import ParsingErrorRow, Processor
from plowline_core.event import parser, values
from plowline_core.event.fields import ENRICHED_FIELDS, Kind
from plowline_core.event.model import EnrichedEvent
from plowline_core.event.parser import parse, parse_bytes
from plowline_core.testing.tsv import enriched_line

_PROCESSOR = Processor("plowline-loader", "0.1.0")
_NO_TAB = st.characters(blacklist_characters="\t", blacklist_categories=("Cs",))
_FIELD_TEXTS = st.one_of(
    st.text(_NO_TAB, max_size=12),
    st.sampled_from(["", "0", "1", "-1", "2147483648", "1.5", "NaN", "1e999", "0x1p3", "true"]),
    st.sampled_from(["2013-11-26 00:02:05", "2013-11-26 00:02:05.292", "2013-02-30 00:00:00"]),
    st.sampled_from(
        ["c6ef3124-b53a-4b13-a233-0088f79dcbcb", "1-2-3-4-5", "{}", "[]", '{"schema":1}']
    ),
)


def _assert_total(result: Any) -> None:
    assert isinstance(result, EnrichedEvent | ParsingErrorRow)
    if isinstance(result, ParsingErrorRow):
        assert result.to_json(_PROCESSOR)


@given(st.text())
def test_parse_never_raises_on_text(line: str) -> None:
    """Any text parses to an event or a writable parsing bad row."""
    _assert_total(parse(line))


@given(st.binary())
def test_parse_bytes_never_raises(data: bytes) -> None:
    """Any bytes parse to an event or a writable parsing bad row."""
    _assert_total(parse_bytes(data))


@given(st.lists(_FIELD_TEXTS, min_size=131, max_size=131))
def test_parse_never_raises_on_131_fields(fields: list[str]) -> None:
    """Any 131 fields parse to an event or a writable parsing bad row."""
    _assert_total(parse("\t".join(fields)))


@given(st.lists(_FIELD_TEXTS, min_size=131, max_size=131))
def test_fast_and_exact_paths_agree(fields: list[str]) -> None:
    """The optimistic decoder and the field-by-field decoder give the same result."""
    line = "\t".join(fields)
    assert parser.decode_fields(line.split("\t"), line) == parse(line)


_TIMESTAMP_TEXT = st.from_regex(
    r"\A[0-9]{4}-[0-9]{2}-[0-9]{2}[ T][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{0,10})?\Z"
)


@given(_TIMESTAMP_TEXT)
def test_timestamp_fast_path_matches_java_model(text: str) -> None:
    """The fast timestamp decoder agrees with the exact model of Instant.parse."""

    def outcome(decode: Any) -> Any:
        try:
            return decode(text)
        except ValueError:
            return "invalid"

    assert outcome(values._java_instant) == outcome(values.decode_timestamp)


_INSTANTS = st.datetimes(datetime(1970, 1, 1), datetime(2100, 1, 1))


@st.composite
def _timestamp(draw: st.DrawFn) -> tuple[str, str]:
    moment = draw(_INSTANTS)
    digits = draw(st.integers(0, 9))
    nanos = draw(st.integers(0, 10**digits - 1)) if digits else 0
    base = moment.strftime("%Y-%m-%d %H:%M:%S")
    text = f"{base}.{nanos:0{digits}d}" if digits else base
    scaled = nanos * 10 ** (9 - digits)
    iso = moment.strftime("%Y-%m-%dT%H:%M:%S")
    if scaled == 0:
        return text, f"{iso}Z"
    if scaled % 1_000_000 == 0:
        return text, f"{iso}.{scaled // 1_000_000:03d}Z"
    if scaled % 1000 == 0:
        return text, f"{iso}.{scaled // 1000:06d}Z"
    return text, f"{iso}.{scaled:09d}Z"


_STRINGS = st.text(_NO_TAB, min_size=1, max_size=20)
_VALUE_STRATEGIES: dict[Kind, st.SearchStrategy[tuple[str, Any]]] = {
    Kind.STRING: _STRINGS.map(lambda text: (text, text)),
    Kind.INT: st.integers(-(2**31), 2**31 - 1).map(lambda n: (str(n), n)),
    Kind.DOUBLE: st.floats(allow_nan=False, allow_infinity=False).map(lambda x: (repr(x), x)),
    Kind.BOOLEAN: st.booleans().map(lambda b: ("1" if b else "0", b)),
    Kind.UUID: st.uuids().map(lambda u: (str(u).upper(), str(u))),
    Kind.TIMESTAMP: _timestamp(),
}
_ATOMIC = [field for field in ENRICHED_FIELDS if not field.is_entity]


@st.composite
def _atomic_values(draw: st.DrawFn) -> dict[str, tuple[str, Any]]:
    chosen: dict[str, tuple[str, Any]] = {}
    for field in _ATOMIC:
        if field.required or draw(st.booleans()):
            chosen[field.name] = draw(_VALUE_STRATEGIES[field.kind])
    return chosen


@settings(max_examples=200)
@given(_atomic_values())
def test_valid_line_round_trips(chosen: dict[str, tuple[str, Any]]) -> None:
    """A line built from random atomic values parses back to exactly those values."""
    overrides = {field.name: None for field in _ATOMIC}
    overrides.update({name: text for name, (text, _) in chosen.items()})
    expected = {field.name: chosen[field.name][1] for field in _ATOMIC if field.name in chosen}
    result = parse(enriched_line(**overrides))
    assert isinstance(result, EnrichedEvent)
    assert list(expected.items()) == list(result.atomic.items())


def test_round_trip_helpers_cover_every_kind() -> None:
    """Every atomic kind has a value strategy (a guard for new kinds)."""
    assert {field.kind for field in _ATOMIC} == set(_VALUE_STRATEGIES)
