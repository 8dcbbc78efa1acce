"""Entity JSON nesting deeper than MAX_NESTING is a ParsingFailure; anything else parses as orjson does."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from plowline_core.event.entities import MAX_NESTING, EntityError, parse_json

TOO_DEEP = f"ParsingFailure: JSON nested deeper than {MAX_NESTING} levels"


def _depth(document: Any) -> int:
    deepest, stack = 0, [(document, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict | list):
            deepest = max(deepest, depth + 1)
            items = value.values() if isinstance(value, dict) else value
            stack.extend((item, depth + 1) for item in items)
    return deepest


def _outcome(text: str) -> Any:
    """Return what ``parse_json`` gives: the value, or the EntityError message."""
    try:
        return ("value", parse_json(text))
    except EntityError as error:
        return ("error", str(error))


def _reference(text: str) -> Any:
    """Return what a plain orjson parse gives, with the nesting rule applied."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as error:
        if str(error).startswith("depth limit exceeded"):
            return ("error", TOO_DEEP)
        return ("error", f"ParsingFailure: {error}")
    return ("error", TOO_DEEP) if _depth(value) > MAX_NESTING else ("value", value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "[" * 250 + "]" * 250, ("value", orjson.loads("[" * 250 + "]" * 250)), id="250"
        ),
        pytest.param("[" * 251 + "]" * 251, ("error", TOO_DEEP), id="251"),
        pytest.param('{"a":' * 251 + "1" + "}" * 251, ("error", TOO_DEEP), id="objects-251"),
        pytest.param("[" * 1100 + "]" * 1100, ("error", TOO_DEEP), id="past-orjson"),
        pytest.param("[{}]," * 300, _reference("[{}]," * 300), id="invalid-many-brackets"),
        pytest.param(
            "[" * 300 + "1],[2" + "]" * 300,
            _reference("[" * 300 + "1],[2" + "]" * 300),
            id="looks-valid-padded",
        ),
        pytest.param(
            "[" + "[1]," * 400 + "2]", ("value", orjson.loads("[" + "[1]," * 400 + "2]")), id="wide"
        ),
    ],
)
def test_nesting_rule(text: str, expected: Any) -> None:
    """Texts at, past and around the nesting limit parse or fail as the rule says."""
    assert expected == _outcome(text)


@given(st.text(st.sampled_from('[]{}:,1"a '), max_size=1200))
def test_parse_is_orjson_with_the_nesting_rule(text: str) -> None:
    """Any text made of JSON punctuation parses as orjson parses it, deep ones refused."""
    assert _reference(text) == _outcome(text)


@given(st.integers(MAX_NESTING - 5, MAX_NESTING + 5), st.sampled_from(["[", '{"k":']))
def test_deep_text_at_the_boundary(depth: int, opener: str) -> None:
    """Nesting up to MAX_NESTING parses; one level more is refused."""
    closer = "]" if opener == "[" else "}"
    text = opener * depth + "0" + closer * depth
    assert _reference(text) == _outcome(text)
