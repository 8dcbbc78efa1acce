"""Hostile lines through the transform: every message is a row or a precise bad row, never a raise."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from plowline_core.badrows import BadRow, FailureCode, Processor
from plowline_core.event.atomic import decode_valid_line, decode_valid_line_python
from plowline_core.event.entities import MAX_NESTING
from plowline_core.event.model import EnrichedEvent
from plowline_core.event.parser import parse_bytes
from plowline_core.iglu.config import EmbeddedConnection, RepositoryRef
from plowline_core.iglu.key import SchemaKey
from plowline_core.iglu.resolver import Resolver
from plowline_core.schema.entity import ColumnMode
from plowline_core.testing.clock import FixedClock
from plowline_core.testing.hostile import GOOD, HostileLine, hostile_line, hostile_lines
from plowline_core.testing.hostile_strategies import any_text, hostile_messages
from plowline_core.testing.registry import InMemoryRegistry
from plowline_core.transform.row import RowBuilder, TransformedRow

DATA = Path(__file__).resolve().parents[2] / "data"
PROCESSOR = Processor("plowline-loader", "0.1.0")


def _iglu_central() -> dict[SchemaKey, Any]:
    root = DATA / "iglu-central" / "schemas"
    schemas = {}
    for path in root.glob("*/*/*/*"):
        vendor, name, fmt, version = path.relative_to(root).parts
        schemas[SchemaKey.parse(f"iglu:{vendor}/{name}/{fmt}/{version}")] = orjson.loads(
            path.read_bytes()
        )
    return schemas


_SCHEMAS = _iglu_central()


def _builder(mode: ColumnMode) -> RowBuilder:
    registry = InMemoryRegistry("Iglu Central", _SCHEMAS)
    ref = RepositoryRef(registry.name, 0, (), EmbeddedConnection("iglu-central"))
    return RowBuilder(
        Resolver([(ref, registry)], FixedClock(datetime(2024, 5, 1, tzinfo=UTC))), mode
    )


_BUILDERS = {mode: _builder(mode) for mode in ColumnMode}


def _transform(builder: RowBuilder, data: bytes) -> TransformedRow | BadRow:
    """Transform message bytes as the loader and the transform command do."""
    try:
        return builder.transform_line(data.decode("utf-8"))
    except UnicodeDecodeError:
        parsed = parse_bytes(data)
        return builder.build(parsed) if isinstance(parsed, EnrichedEvent) else parsed


def _outcome(result: TransformedRow | BadRow) -> str:
    """Return ``good`` or the bad row's code, after checking the output reads back as JSON."""
    if isinstance(result, TransformedRow):
        assert isinstance(orjson.loads(result.to_json()), dict)
        return GOOD
    document = orjson.loads(result.to_json(PROCESSOR))
    assert document["data"]["processor"] == PROCESSOR.to_dict()
    return str(FailureCode(result.code))


@pytest.mark.parametrize("mode", list(ColumnMode), ids=lambda mode: mode.value)
@pytest.mark.parametrize("line", hostile_lines(), ids=lambda line: line.name)
def test_named_hostile_line_becomes_its_outcome(line: HostileLine, mode: ColumnMode) -> None:
    """Each named hostile line becomes the row or the precise bad row its catalogue entry names."""
    expected = line.expected_in(mode is ColumnMode.MAJOR)
    assert expected == _outcome(_transform(_BUILDERS[mode], line.data))


def test_nested_entity_bad_row_keeps_the_data() -> None:
    """A cast failure on data nested to the parser's limit reports that data in full."""
    result = _transform(_BUILDERS[ColumnMode.FULL], hostile_line("nested-at-limit").data)
    document = orjson.loads(result.to_json(PROCESSOR))
    value = document["data"]["failure"][0]["value"]
    depth = 0
    while isinstance(value, list):
        value, depth = value[0], depth + 1
    expected = (MAX_NESTING - 2, 1)
    assert expected == (depth, value)


@pytest.mark.parametrize("mode", list(ColumnMode), ids=lambda mode: mode.value)
@settings(max_examples=300)
@given(data=hostile_messages())
def test_any_hostile_message_is_a_row_or_a_bad_row(mode: ColumnMode, data: bytes) -> None:
    """Any hostile bytes give a row or a bad row whose JSON reads back; nothing raises."""
    assert _outcome(_transform(_BUILDERS[mode], data)) in {GOOD, *map(str, FailureCode)}


@pytest.mark.parametrize("mode", list(ColumnMode), ids=lambda mode: mode.value)
@given(text=any_text() | st.lists(any_text(), min_size=2, max_size=135).map("\t".join))
def test_any_text_line_is_a_row_or_a_bad_row(mode: ColumnMode, text: str) -> None:
    """Any ``str`` line, lone surrogates included, gives a row or a bad row that encodes."""
    assert _outcome(_BUILDERS[mode].transform_line(text)) in {GOOD, *map(str, FailureCode)}


@given(data=hostile_messages())
def test_line_decoder_agrees_with_its_reference_on_hostile_lines(data: bytes) -> None:
    """The C line decoder answers as the pure-Python reference on any hostile line."""
    text = data.decode("utf-8", "surrogateescape")
    assert decode_valid_line_python(text) == decode_valid_line(text)


def test_row_of_a_str_line_with_a_lone_surrogate_encodes() -> None:
    """A ``str`` line with a lone surrogate in a string field is a row written with U+FFFD."""
    line = hostile_line("good").data.decode().replace("Example", "Ex\ud800ample")
    result = _BUILDERS[ColumnMode.FULL].transform_line(line)
    assert isinstance(result, TransformedRow)
    expected = "Ex\ufffdample"
    assert expected == orjson.loads(result.to_json())["page_title"]
