"""BigQuery's schema limits checked before a patch: leaf fields and legal names."""

from __future__ import annotations

import pytest
from plowline_core.schema.field import Field, FieldType, Mode
from plowline_core.schema.limits import illegal_names, leaf_count, split_at_limit

S = FieldType.STRING
RECORD = Field("r", FieldType.RECORD, Mode.REPEATED, (Field("a", S), Field("b", S)))


def test_leaf_count_counts_nested_leaves_not_records() -> None:
    """A RECORD counts as its leaves: two leaves inside plus one column make three."""
    assert leaf_count([Field("x", S), RECORD]) == 3


@pytest.mark.parametrize(
    ("field", "expected"),
    [
        pytest.param(RECORD, 0, id="legal"),
        pytest.param(Field("r", FieldType.RECORD, fields=(Field("", S),)), 1, id="empty-nested"),
        pytest.param(Field("x" * 301, S), 1, id="301-characters"),
        pytest.param(Field("1x", S), 1, id="digit-first"),
        pytest.param(
            Field("r", FieldType.RECORD, fields=(Field("a", S), Field("A", S))), 1, id="twice"
        ),
    ],
)
def test_illegal_names_finds_every_name_bigquery_refuses(field: Field, expected: int) -> None:
    """Empty, too long, badly started and case-duplicate names are each reported once."""
    assert expected == len(illegal_names(field))


def test_split_at_limit_skips_a_column_too_wide_and_takes_the_next() -> None:
    """With room for two leaves a three-leaf column waits and a one-leaf column fits."""
    wide = Field("w", FieldType.RECORD, fields=(Field("a", S), Field("b", S), Field("c", S)))
    fits, over = split_at_limit([Field("x", S)], [wide, Field("y", S)], limit=3)
    assert ([f.name for f in fits], [f.name for f in over]) == (["y"], ["w"])
