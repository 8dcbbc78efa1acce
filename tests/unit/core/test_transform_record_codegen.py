"""The RECORD casters (C and straight-line Python) agree with each other and the general walk."""

from __future__ import annotations

import tracemalloc
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from plowline_core.schema.entity import ColumnMode
from plowline_core.schema.field import Field, FieldType, Mode
from plowline_core.schema.names import normalize_field_name
from plowline_core.transform import _record_caster
from plowline_core.transform.cast import _as_is_types, _non_null_caster, caster_for
from plowline_core.transform.codegen import specialised_record, straight_line_record

_SCALARS = [kind for kind in FieldType if kind is not FieldType.RECORD]
_NAMES = st.sampled_from(["a", "b", "Ab", "c_d", "cD"])
_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats()
    | st.sampled_from(["x", "2024-01-02", "2024-01-02T03:04:05Z"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_NAMES, inner, max_size=4),
    max_leaves=8,
)
_UNKNOWN_KEY = "zz unknown zz"  # normalises to no generated sub-field name


def _record(subs: list[Field]) -> Field:
    unique = {sub.name: sub for sub in subs}
    return Field("r", FieldType.RECORD, Mode.NULLABLE, tuple(unique.values()))


_FIELDS = st.recursive(
    st.builds(Field, _NAMES, st.sampled_from(_SCALARS), st.sampled_from(list(Mode))),
    lambda inner: st.builds(
        lambda name, mode, subs: Field(name, FieldType.RECORD, mode, _record(subs).fields),
        _NAMES,
        st.sampled_from(list(Mode)),
        st.lists(inner, min_size=1, max_size=4),
    ),
    max_leaves=6,
)


def _outcome(field: Field, value: Any, mode: ColumnMode) -> tuple[Any, list[str]]:
    errors: list[Any] = []
    result = caster_for(field, mode)(value, errors)
    return (None if errors else result), [type(error).__name__ for error in errors]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(_FIELDS, min_size=1, max_size=5),
    st.dictionaries(_NAMES, _JSON, max_size=5),
    st.sampled_from(list(ColumnMode)),
)
def test_record_cast_ignores_an_unknown_key(
    subs: list[Field], value: dict[str, Any], mode: ColumnMode
) -> None:
    """An unknown key (general walk) leaves the result of the compiled caster unchanged."""
    field = _record(subs)
    expected = _outcome(field, value, mode)
    actual = _outcome(field, {**value, _UNKNOWN_KEY: 1}, mode)
    assert expected == actual


def _plan(field: Field, mode: ColumnMode) -> tuple[Any, ...]:
    """The inputs cast.py hands to codegen for a RECORD field (its compiled sub-casters)."""
    subs = field.fields
    names = tuple(normalize_field_name(sub.name) for sub in subs)
    direct = tuple(
        _non_null_caster(sub, mode) if sub.mode is Mode.NULLABLE else caster_for(sub, mode)
        for sub in subs
    )
    as_is = tuple(_as_is_types(sub, mode) for sub in subs)
    return subs, names, direct, as_is


def _general(value: Any, errors: list[Any]) -> Any:
    """A stand-in for the general walk that shows it was called, and with which errors."""
    return ("general", value, list(errors))


def _call(caster: Any, value: Any, errors: list[Any]) -> Any:
    result = caster(value, errors)
    return result, [repr(error) for error in errors]


_EDGES = [2**63 - 1, -(2**63) + 1, 2**63, -(2**63), 2**64, 0, -0.0, 1.5, float("inf")]
_EDGES += [float("-inf"), float("nan"), True, False, 10**30, -(10**30), None, "x", [1, None], {}]
_EDGE_NUMBERS = st.sampled_from(_EDGES)


@settings(max_examples=400, deadline=None)
@given(
    st.lists(_FIELDS, min_size=1, max_size=5),
    st.dictionaries(_NAMES, _JSON | _EDGE_NUMBERS, max_size=5),
    st.sampled_from(list(ColumnMode)),
    st.lists(st.just("earlier error"), max_size=2),
)
def test_the_c_record_caster_answers_as_the_straight_line_python(
    subs: list[Field], value: dict[str, Any], mode: ColumnMode, earlier: list[Any]
) -> None:
    """Same value (or the same call of the general walk), same errors, from any object."""
    plan = _plan(_record(subs), mode)
    native = specialised_record(*plan, _general)
    reference = straight_line_record(*plan, _general)
    assert isinstance(native, _record_caster.RecordCaster)
    expected = _call(reference, value, list(earlier))
    actual = _call(native, value, list(earlier))
    assert repr(expected) == repr(actual)  # repr: tells 1 from 1.0 and True, and nan from nan


@pytest.mark.parametrize("column_mode", list(ColumnMode))
@pytest.mark.parametrize("mode", list(Mode))
@pytest.mark.parametrize("kind", _SCALARS)
def test_the_c_record_caster_keeps_or_casts_each_edge_value_as_the_python_does(
    kind: FieldType, mode: Mode, column_mode: ColumnMode
) -> None:
    """Every edge number, null, text and boolean, in a sub-field of every type and mode."""
    field = Field("r", FieldType.RECORD, Mode.NULLABLE, (Field("a", kind, mode),))
    plan = _plan(field, column_mode)
    native = specialised_record(*plan, _general)
    reference = straight_line_record(*plan, _general)
    for item in _EDGES:
        expected = _call(reference, {"a": item}, [])
        assert repr(expected) == repr(_call(native, {"a": item}, [])), item
    assert repr(_call(reference, {}, [])) == repr(_call(native, {}, []))


def test_the_c_record_caster_sends_anything_but_a_plain_dict_to_the_general_walk() -> None:
    """A list, a dict subclass or an unknown key is the general walk's business."""
    field = Field("r", FieldType.RECORD, Mode.NULLABLE, (Field("a", FieldType.STRING),))
    native = specialised_record(*_plan(field, ColumnMode.FULL), _general)
    assert native is not None

    class Sub(dict[str, Any]):
        pass

    for value in ([1], Sub(a="x"), {"a": "x", "b": 1}, None):
        assert native(value, []) == ("general", value, [])
    assert native({"a": "x"}, []) == {"a": "x"}


def test_the_c_record_caster_refuses_a_plan_it_cannot_follow() -> None:
    """Mismatched or repeated names and unknown flags fail at construction, named."""
    caster = _record_caster.RecordCaster
    ok = (("a",), ("a",), (_general,), (0,), (False,), _general)
    caster(*ok)
    with pytest.raises(ValueError, match="names must be a tuple of 1 items"):
        caster(ok[0], ("a", "b"), *ok[2:])
    with pytest.raises(ValueError, match="raw name 'a' is given twice"):
        caster(("a", "a"), ("a", "b"), (_general, _general), (0, 0), (False, False), _general)
    with pytest.raises(ValueError, match="unknown flags 99"):
        caster(*ok[:3], (99,), *ok[4:])
    with pytest.raises(TypeError, match="casters\\[0\\] is not a callable"):
        caster(ok[0], ok[1], (1,), *ok[3:])


def test_the_c_record_caster_holds_no_memory_per_call() -> None:
    """A quarter of a million calls, clean and falling back, leave allocated memory where it was."""
    field = Field(
        "r",
        FieldType.RECORD,
        Mode.NULLABLE,
        (Field("a", FieldType.STRING), Field("n", FieldType.INTEGER, Mode.REQUIRED)),
    )
    native = caster_for(field, ColumnMode.FULL)
    values = [{"a": "x", "n": 2**40}, {"a": 123456, "n": 3}, {"n": "x"}, {"a": "x"}, {"b": 1}]
    for value in values * 1000:  # warm every path
        native(value, [])
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for _ in range(50_000):
        for value in values:
            native(value, [])
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert after - before < 64 * 1024
