"""2.x's decimals: a bounded JSON Schema number is a Decimal(precision, scale) that values must fit."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from plowline_core.schema.entity import ColumnMode
from plowline_core.schema.field import Field, FieldType, Mode
from plowline_core.schema.mapping import field_from_schema
from plowline_core.transform.cast import WrongType, cast

#: A price: up to 900 with cents, so schema-ddl's Decimal(Digits9, 2).
PRICE = {"type": "number", "minimum": 0, "maximum": 900, "multipleOf": 0.01}
#: A quantity measured to the gram over a wide range: Decimal(Digits18, 3).
WEIGHT = {"type": "number", "minimum": -(10**12), "maximum": 10**12, "multipleOf": 0.001}


def _cast(schema: dict[str, Any], value: Any, required: bool = True) -> tuple[Any, list[Any]]:
    field = field_from_schema("x", schema, required, ColumnMode.MAJOR)
    outcome = cast(field, value, ColumnMode.MAJOR)
    return outcome.value, [
        (e.value, e.expected) for e in outcome.errors if isinstance(e, WrongType)
    ]


@pytest.mark.parametrize(
    ("schema", "value"),
    [
        pytest.param(PRICE, 12.5, id="one-place"),
        pytest.param(PRICE, 12.25, id="two-places"),
        pytest.param(PRICE, 7, id="whole"),
        pytest.param(PRICE, -3.05, id="negative-beyond-the-schema-minimum"),
        pytest.param(PRICE, 1234567.89, id="seven-digits-before-the-point"),
        pytest.param(WEIGHT, 123456789012345.125, id="fifteen-digits-and-three-places"),
    ],
)
def test_a_value_that_fits_is_written_as_it_came(schema: dict[str, Any], value: Any) -> None:
    """A number within the decimal's places and digits is kept, whatever the schema's bounds."""
    assert (value, []) == _cast(schema, value)


@pytest.mark.parametrize(
    ("schema", "value", "expected"),
    [
        pytest.param(PRICE, 12.345, "Decimal(Digits9,2)", id="three-places"),
        pytest.param(PRICE, 0.001, "Decimal(Digits9,2)", id="too-small-a-step"),
        pytest.param(PRICE, 12345678.5, "Decimal(Digits9,2)", id="eight-digits-before"),
        pytest.param(PRICE, "12.5", "Decimal(Digits9,2)", id="a-string"),
        pytest.param(PRICE, True, "Decimal(Digits9,2)", id="a-boolean"),
        pytest.param(WEIGHT, 0.0001, "Decimal(Digits18,3)", id="four-places"),
        pytest.param(WEIGHT, 10**16, "Decimal(Digits18,3)", id="seventeen-digits"),
    ],
)
def test_a_value_that_does_not_fit_is_a_wrong_type_naming_the_decimal(
    schema: dict[str, Any], value: Any, expected: str
) -> None:
    """Too many places or digits is 2.x's WrongType with Decimal(Digits<p>,<s>) expected."""
    assert (None, [(value, expected)]) == _cast(schema, value)


def test_a_missing_required_decimal_names_the_decimal() -> None:
    """A null in a REQUIRED decimal says which decimal was expected, as 2.x does."""
    expected = (None, [(None, "Decimal(Digits9,2)")])
    assert expected == _cast(PRICE, None)


def test_a_decimal_inside_a_record_is_checked_on_every_path() -> None:
    """Within an object (the specialised record casters) the places are checked too."""
    schema = {"type": "object", "properties": {"price": PRICE, "name": {"type": "string"}}}
    field = field_from_schema("x", schema, False, ColumnMode.MAJOR)

    good = cast(field, {"price": 3.5, "name": "a"}, ColumnMode.MAJOR)
    bad = cast(field, {"price": 3.555, "name": "a"}, ColumnMode.MAJOR)

    expected = ({"name": "a", "price": 3.5}, ["Decimal(Digits9,2)"])
    assert expected == (good.value, [e.expected for e in bad.errors])  # type: ignore[attr-defined]


def test_the_column_stays_a_plain_numeric() -> None:
    """The column 2.x makes carries no precision: the table keeps its shape."""
    field = field_from_schema("x", PRICE, False, ColumnMode.MAJOR)
    expected = {"name": "x", "type": "NUMERIC", "mode": "NULLABLE"}
    assert expected == field.to_api()


def test_full_mode_keeps_taking_any_number() -> None:
    """1.x's rules write any number into NUMERIC: nothing changes there."""
    field = Field("x", FieldType.NUMERIC, Mode.NULLABLE, precision=9, scale=2)
    expected = (12.345, ())
    assert expected == tuple(cast(field, 12.345, ColumnMode.FULL))


@given(st.decimals(min_value=-(10**6), max_value=10**6, places=2, allow_nan=False))
def test_every_cent_amount_within_the_digits_fits(amount: Any) -> None:
    """Any amount with at most two places and seven digits before the point fits Digits9,2."""
    value = float(amount)
    expected: list[Any] = []
    assert expected == _cast(PRICE, value)[1]
