"""insertAll request bodies: each row encoded once, the body the client would have sent."""

from __future__ import annotations

import json
from types import MappingProxyType
from typing import Any

import orjson
import pytest
from plowline_cloud.row_sink import encoded_entry, encoded_size, request_body, whole_request_body
from plowline_core.ports import Row


def _body(rows: list[Row]) -> Any:
    return json.loads(request_body([encoded_entry(row) for row in rows]))


def test_body_is_the_insert_all_request_of_the_rows() -> None:
    """The body reads back as insertAll's request: rows with insertId and json, no skipping."""
    rows = [
        Row("e1", {"event_id": "e1", "contexts_x_1": [{"a": 1, "b": [1.5, None]}]}),
        Row("e2", {"event_id": "e2", "app_id": 'quote " tab \t é 🎉'}),
    ]
    expected = {
        "rows": [{"insertId": row.insert_id, "json": dict(row.data)} for row in rows],
        "skipInvalidRows": False,
        "ignoreUnknownValues": False,
    }
    assert expected == _body(rows)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(2**70, 2**70, id="integer-beyond-64-bits-exact"),
        pytest.param("\ud800x", "\ud800x", id="lone-surrogate-escaped"),
        pytest.param(float("nan"), None, id="nan-null"),
        pytest.param(float("inf"), None, id="infinity-null"),
    ],
)
def test_values_orjson_refuses_or_json_cannot_hold(value: Any, expected: Any) -> None:
    """A value orjson refuses is written by the json module; NaN and Infinity become null."""
    assert expected == _body([Row("e1", {"v": value})])["rows"][0]["json"]["v"]


def test_mapping_that_is_not_a_dict_is_encoded_as_one() -> None:
    """A read-only mapping row is written as its items (insert_rows_json took any mapping)."""
    row = Row("e1", MappingProxyType({"event_id": "e1", "n": 3}))
    expected = {"event_id": "e1", "n": 3}
    assert expected == _body([row])["rows"][0]["json"]


def test_value_json_has_no_type_for_raises_type_error() -> None:
    """A value JSON has no type for fails the insert with TypeError, as the client did."""
    with pytest.raises(TypeError):
        encoded_entry(Row("e1", {"v": object()}))


def test_encoded_size_is_the_entry_length() -> None:
    """The size counted against the request limit is the entry's encoded length."""
    row = Row("e1", {"event_id": "e1", "app_id": "é" * 10})
    assert len(orjson.dumps({"insertId": "e1", "json": dict(row.data)})) == encoded_size(row)


_ROWS = [
    Row("e1", {"event_id": "e1", "contexts_x_1": [{"a": 1, "b": [1.5, None, True]}]}),
    Row("e2", {"event_id": "e2", "app_id": 'quote " tab \t é 🎉 \u2028', "n": -(2**63)}),
    Row("e3", {"event_id": "e3", "v": float("nan"), "w": float("-inf"), "empty": {}}),
]


def test_whole_body_is_the_row_by_row_body_byte_for_byte() -> None:
    """One pass over the rows writes exactly the bytes the row-by-row encoding joins."""
    assert request_body([encoded_entry(row) for row in _ROWS]) == whole_request_body(
        _ROWS, 10_000_000
    )


@pytest.mark.parametrize(
    "odd",
    [
        pytest.param(Row("e9", {"v": 2**70}), id="integer-beyond-64-bits"),
        pytest.param(Row("e9", {"v": "\ud800x"}), id="lone-surrogate"),
        pytest.param(Row("\ud800", {"v": 1}), id="lone-surrogate-in-insert-id"),
        pytest.param(Row("e9", MappingProxyType({"v": 1})), id="mapping-not-a-dict"),
        pytest.param(Row("e9", {"v": object()}), id="no-json-type"),
    ],
)
def test_whole_body_leaves_a_row_orjson_cannot_write_to_the_row_by_row_path(odd: Row) -> None:
    """One row orjson refuses (or a mapping to copy first) among good ones: no whole body."""
    assert whole_request_body([*_ROWS, odd], 10_000_000) is None


def test_whole_body_over_the_limit_is_none() -> None:
    """A body one byte over max_bytes is not returned (the rows are split into requests)."""
    size = len(request_body([encoded_entry(row) for row in _ROWS]))
    expected = (None, True)
    assert expected == (
        whole_request_body(_ROWS, size - 1),
        whole_request_body(_ROWS, size) is not None,
    )
