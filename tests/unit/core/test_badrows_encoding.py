"""Encoding a bad row never fails: any depth, lone surrogates, huge integers, odd objects."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from plowline_core.badrows import IgluErrorRow, Processor
from plowline_core.badrows.encoding import GUARD_DEPTH, MAX_DEPTH, dumps
from plowline_core.transform.cast import compact_json

PROCESSOR = Processor("plowline-loader", "0.1.0")


def _nested(depth: int, leaf: Any = None) -> Any:
    """Return ``depth`` lists nested in one another around ``leaf`` (built without recursion)."""
    value = [] if leaf is None else [leaf]
    for _ in range(depth - 1):
        value = [value]
    return value


def _depth(document: Any) -> int:
    """Return how many containers nest at most in ``document`` (iteratively)."""
    deepest, stack = 0, [(document, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict | list):
            deepest = max(deepest, depth + 1)
            items = value.values() if isinstance(value, dict) else value
            stack.extend((item, depth + 1) for item in items)
    return deepest


@pytest.mark.parametrize("depth", [254, 255, 300, MAX_DEPTH - 3, 1024])
def test_bad_row_of_a_deeply_nested_payload_encodes(depth: int) -> None:
    """An Iglu bad row whose payload nests past orjson's 255 levels encodes and reads back."""
    payload = {"unstruct_event": {"data": {"data": _nested(depth)}}}
    bad = IgluErrorRow(({"schemaKey": "iglu:com.acme/x/jsonschema/1-0-0", "error": "x"},), payload)
    encoded = bad.to_json(PROCESSOR)
    document = orjson.loads(encoded)
    assert document["data"]["failure"] == list(bad.failures)
    assert _depth(document) <= MAX_DEPTH


def test_payload_within_max_depth_is_exact() -> None:
    """A document nested past orjson's limit but within MAX_DEPTH is written exactly."""
    document = {"a": [1, "x", None, True, 2.5, {"b": _nested(400, "leaf")}], "c": {}}
    assert json.dumps(document, separators=(",", ":")).encode() == dumps(document)


def test_containers_past_max_depth_become_their_json_text() -> None:
    """A container nested deeper than MAX_DEPTH is written as a string holding its JSON."""
    document = _nested(1024, "leaf")
    decoded = orjson.loads(dumps(document))
    inner = decoded
    for _ in range(MAX_DEPTH - 1):
        inner = inner[0]
    assert isinstance(inner[0], str)
    assert _nested(1024 - MAX_DEPTH, "leaf") == json.loads(inner[0])


def test_deep_json_text_is_uncapped() -> None:
    """``max_depth=None`` (STRING columns) writes every level as it is."""
    expected = b"[" * 1024 + b"7" + b"]" * 1024
    assert expected == dumps(_nested(1024, 7), max_depth=None)


@pytest.mark.parametrize(
    ("text", "written"),
    [
        pytest.param("a\ud800b", "a\ufffdb", id="lone-high"),
        pytest.param("\udc00", "\ufffd", id="lone-low"),
        pytest.param("\ud83d\ude00", "\U0001f600", id="pair-becomes-its-character"),
    ],
)
def test_text_that_is_not_unicode_is_replaced(text: str, written: str) -> None:
    """Lone surrogates become U+FFFD, in values and keys, at any depth."""
    document = {text: [text, _nested(300, text)]}
    decoded = orjson.loads(dumps(document))
    assert [written] == list(decoded)
    assert written == decoded[written][0]


def test_integers_beyond_64_bits_are_exact() -> None:
    """An integer orjson refuses is written with its exact digits."""
    big = 2**200 + 1
    assert f'{{"n":[{big},{-big}]}}'.encode() == dumps({"n": [big, -big]})


def test_non_finite_floats_are_null() -> None:
    """NaN and Infinity are null, next to a value that forces the careful path."""
    expected = b'[null,null,null,"\xef\xbf\xbd"]'
    assert expected == dumps([float("nan"), float("inf"), float("-inf"), "\ud800"])


def test_odd_keys_and_objects_are_text() -> None:
    """Non-string keys are their JSON text; other objects are ``str(value)``."""
    document = {1: "a", None: "b", False: "c", 2.5: "d", ("t",): "e", "f": {3}, "g": object}
    decoded = orjson.loads(dumps(document))
    expected = {"1": "a", "null": "b", "false": "c", "2.5": "d", "('t',)": "e"}
    assert {**expected, "f": "{3}", "g": str(object)} == decoded


def test_a_container_inside_itself_stops_at_the_guard_depth() -> None:
    """A cycle cannot hang or crash the encoder: past GUARD_DEPTH levels it writes null."""
    cycle: list[Any] = [1]
    cycle.append(cycle)
    inner = orjson.loads(dumps(cycle))
    for _ in range(MAX_DEPTH):
        inner = inner[1]
    expected = "[1," * (GUARD_DEPTH - 1) + "[1,null" + "]" * GUARD_DEPTH
    assert expected == inner


def test_shared_containers_are_written_at_each_place() -> None:
    """A container referenced twice (not a cycle) is written twice, deep or not."""
    shared = _nested(300, 1)
    assert orjson.loads(dumps([shared, shared])) == [shared, shared]


def test_compact_json_of_a_deep_value_is_its_text() -> None:
    """A STRING column given a value nested 1000 deep keeps its JSON text (no RecursionError)."""
    expected = "[" * 1000 + "1" + "]" * 1000
    assert expected == compact_json(_nested(1000, 1))


_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(st.characters(codec=None, exclude_categories=())),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=3), children, max_size=4)
    ),
    max_leaves=30,
)


@given(_json, st.integers(min_value=0, max_value=700))
def test_any_document_at_any_depth_encodes_and_reads_back(document: Any, depth: int) -> None:
    """Any JSON-like value, wrapped ``depth`` lists deep, encodes to JSON that reads back."""
    wrapped = document
    for _ in range(depth):
        wrapped = [wrapped]
    encoded = dumps({"payload": wrapped})
    assert isinstance(orjson.loads(encoded), dict)
    try:
        expected = orjson.dumps({"payload": wrapped})
    except orjson.JSONEncodeError:
        return
    assert expected == encoded
