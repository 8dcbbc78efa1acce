"""The compiled RECORD caster agrees with the general RECORD walk on any object."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from plowline_core.schema.entity import ColumnMode
from plowline_core.schema.field import Field, FieldType, Mode
from plowline_core.transform.cast import caster_for

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
