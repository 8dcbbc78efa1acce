"""The C row check says "every key known" exactly where the Python walk finds nothing."""

from __future__ import annotations

from collections import UserDict
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from plowline_core.schema import _row_check
from plowline_core.schema.field import Field, FieldType, Mode
from plowline_core.schema.widening import (
    _checker_for,
    _walked,
    missing_fields,
    with_missing_fields,
)

S = FieldType.STRING
_NAMES = st.sampled_from(["a", "b", "c_d", "e", "contexts_x"])
# Row keys: the names, others the table lacks, case variants (folded by the walk only).
_KEYS = _NAMES | st.sampled_from(["A", "C_D", "zz", "q"])
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats()
    | st.text(max_size=3)
)


def _unique(fields: list[Field]) -> tuple[Field, ...]:
    return tuple({field.name: field for field in fields}.values())


_FIELDS = st.recursive(
    st.builds(Field, _NAMES, st.just(S), st.sampled_from(list(Mode))),
    lambda inner: st.builds(
        lambda name, mode, subs: Field(name, FieldType.RECORD, mode, _unique(subs)),
        _NAMES,
        st.sampled_from(list(Mode)),
        st.lists(inner, min_size=1, max_size=4),
    ),
    max_leaves=8,
)
_TABLES = st.lists(_FIELDS, max_size=5).map(_unique)
# Any row: dicts, lists, tuples, mappings that are not dicts, at any level.
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.tuples(inner)
        | st.dictionaries(_KEYS, inner, max_size=4)
        | st.dictionaries(_KEYS, inner, max_size=2).map(UserDict)
    ),
    max_leaves=10,
)
_ROWS = st.dictionaries(_KEYS, _VALUES, max_size=6)


def _fitting(table: tuple[Field, ...]) -> st.SearchStrategy[dict[str, Any]]:
    """Rows the table holds: known names only, RECORD values as dicts or lists of dicts."""
    return st.fixed_dictionaries({}, optional={field.name: _value_of(field) for field in table})


def _value_of(field: Field) -> st.SearchStrategy[Any]:
    if field.type is not FieldType.RECORD:
        return _SCALARS
    record = _fitting(field.fields)
    if field.mode is Mode.REPEATED:
        return st.none() | st.lists(record | st.none(), max_size=3)
    return st.none() | record


@settings(max_examples=500, deadline=None)
@given(_TABLES, _ROWS)
def test_all_known_is_true_only_where_the_walk_finds_nothing(
    table: tuple[Field, ...], row: dict[str, Any]
) -> None:
    """Whatever the row, True from C means the Python walk reports no path."""
    checker = _checker_for(table)
    if _row_check.all_known(checker, row):
        expected: list[str] = []
        assert expected == _walked(checker, row)


@settings(max_examples=500, deadline=None)
@given(_TABLES, _ROWS)
def test_missing_fields_answers_as_the_python_walk(
    table: tuple[Field, ...], row: dict[str, Any]
) -> None:
    """missing_fields (C first) lists the same paths as the walk alone, for any row."""
    assert _walked(_checker_for(table), row) == missing_fields(table, row)


@settings(max_examples=300, deadline=None)
@given(_TABLES, st.lists(_ROWS, max_size=5))
def test_a_batch_check_names_the_rows_missing_fields_names(
    table: tuple[Field, ...], rows: list[dict[str, Any]]
) -> None:
    """with_missing_fields gives the positions of exactly the rows missing_fields finds a path in."""
    expected = [n for n, row in enumerate(rows) if missing_fields(table, row)]
    assert expected == with_missing_fields(table, rows)


@settings(max_examples=300, deadline=None)
@given(_TABLES.flatmap(lambda table: st.tuples(st.just(table), _fitting(table))))
def test_all_known_decides_every_row_the_table_holds(
    table_and_row: tuple[tuple[Field, ...], dict[str, Any]],
) -> None:
    """A row of known names, dicts and lists (the transform's rows) is decided in C."""
    table, row = table_and_row
    assert _row_check.all_known(_checker_for(table), row)


CTX = Field("contexts_a", FieldType.RECORD, Mode.REPEATED, (Field("x", S),))
TABLE = (Field("event_id", S), CTX)


def test_an_unknown_key_in_a_later_item_is_not_known() -> None:
    """An unknown sub-field in the third item of a REPEATED RECORD is caught (and reported)."""
    row = {"event_id": "e", "contexts_a": [{"x": "1"}, None, {"x": "2", "y": "3"}]}
    expected = (False, ["contexts_a.y"])
    assert expected == (
        _row_check.all_known(_checker_for(TABLE), row),
        missing_fields(TABLE, row),
    )


def test_a_key_in_another_case_is_left_to_the_walk() -> None:
    """A key the table has in lower case is undecided in C and known to the walk."""
    row = {"EVENT_ID": "e"}
    expected = (False, [])
    assert expected == (
        _row_check.all_known(_checker_for(TABLE), row),
        missing_fields(TABLE, row),
    )


def test_a_mapping_that_is_not_a_dict_is_left_to_the_walk() -> None:
    """An item that is another Mapping is undecided in C; the walk finds its unknown key."""
    row = {"contexts_a": [UserDict({"y": 1})]}
    expected = (False, ["contexts_a.y"])
    assert expected == (
        _row_check.all_known(_checker_for(TABLE), row),
        missing_fields(TABLE, row),
    )


def test_nesting_deeper_than_the_c_limit_is_left_to_the_walk() -> None:
    """A row nested 100 RECORDs deep is undecided in C; the walk finds the unknown leaf."""
    field = Field("r", S)
    for _ in range(100):
        field = Field("r", FieldType.RECORD, Mode.NULLABLE, (field,))
    row: dict[str, Any] = {"zz": 1}
    for _ in range(100):
        row = {"r": row}
    path = ".".join(["r"] * 100) + ".zz"
    expected = (False, [path])
    assert expected == (
        _row_check.all_known(_checker_for((field,)), row),
        missing_fields((field,), row),
    )


def test_a_key_that_is_not_a_str_is_left_to_the_walk() -> None:
    """A non-str key is undecided in C (its lookup could run Python code) and reported."""
    row: dict[Any, Any] = {"event_id": "e", 7: "x"}
    expected = (False, ["7"])
    assert expected == (
        _row_check.all_known(_checker_for(TABLE), row),
        missing_fields(TABLE, row),
    )
