"""Every BigQuery column type is read, kept as it is, and never widened into."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from plowline_core.schema.field import Field, FieldType, Mode, field_type_of
from plowline_core.schema.widening import missing_fields, plan_widening

# One API field per type name BigQuery reports or accepts, with the family it belongs to.
API_TYPES = [
    pytest.param({"type": "STRING", "maxLength": "10"}, FieldType.STRING, id="STRING"),
    pytest.param({"type": "BYTES", "maxLength": "8"}, FieldType.BYTES, id="BYTES"),
    pytest.param({"type": "INTEGER"}, FieldType.INTEGER, id="INTEGER"),
    pytest.param({"type": "INT64"}, FieldType.INTEGER, id="INT64"),
    pytest.param({"type": "FLOAT"}, FieldType.FLOAT, id="FLOAT"),
    pytest.param({"type": "FLOAT64"}, FieldType.FLOAT, id="FLOAT64"),
    pytest.param(
        {"type": "NUMERIC", "precision": "10", "scale": "2", "roundingMode": "ROUND_HALF_EVEN"},
        FieldType.NUMERIC,
        id="NUMERIC",
    ),
    pytest.param(
        {"type": "BIGNUMERIC", "precision": "50", "scale": "20"},
        FieldType.BIGNUMERIC,
        id="BIGNUMERIC",
    ),
    pytest.param({"type": "BOOLEAN"}, FieldType.BOOLEAN, id="BOOLEAN"),
    pytest.param({"type": "BOOL"}, FieldType.BOOLEAN, id="BOOL"),
    pytest.param(
        {"type": "TIMESTAMP", "defaultValueExpression": "CURRENT_TIMESTAMP()"},
        FieldType.TIMESTAMP,
        id="TIMESTAMP",
    ),
    pytest.param({"type": "DATE"}, FieldType.DATE, id="DATE"),
    pytest.param({"type": "TIME"}, FieldType.TIME, id="TIME"),
    pytest.param({"type": "DATETIME"}, FieldType.DATETIME, id="DATETIME"),
    pytest.param({"type": "GEOGRAPHY"}, FieldType.GEOGRAPHY, id="GEOGRAPHY"),
    pytest.param({"type": "JSON"}, FieldType.JSON, id="JSON"),
    pytest.param(
        {"type": "RECORD", "fields": [{"name": "t", "type": "TIME", "mode": "NULLABLE"}]},
        FieldType.RECORD,
        id="RECORD",
    ),
    pytest.param(
        {"type": "STRUCT", "fields": [{"name": "g", "type": "GEOGRAPHY", "mode": "REPEATED"}]},
        FieldType.RECORD,
        id="STRUCT",
    ),
    pytest.param(
        {"type": "RANGE", "rangeElementType": {"type": "DATE"}}, FieldType.RANGE, id="RANGE"
    ),
    pytest.param({"type": "INTERVAL"}, FieldType.INTERVAL, id="INTERVAL"),
    pytest.param({"type": "VECTOR_OF_THE_FUTURE"}, FieldType.OTHER, id="unknown-name"),
]
OPTIONS = {
    "description": "set by hand",
    "policyTags": {"names": ["projects/p/locations/eu/taxonomies/1/policyTags/2"]},
    "collation": "und:ci",
}


def _column(spec: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"name": "hand_made", "mode": "NULLABLE", **spec, **more}


@pytest.mark.parametrize(("spec", "family"), API_TYPES)
def test_every_type_is_read_into_its_family(spec: dict[str, Any], family: FieldType) -> None:
    """Each BigQuery type name (aliases and unknown names included) reads into its family."""
    assert family is Field.from_api(_column(spec)).type


@pytest.mark.parametrize(("spec", "family"), API_TYPES)
def test_every_type_round_trips_exactly(spec: dict[str, Any], family: FieldType) -> None:
    """API JSON → Field → API JSON gives back the very same column, options included."""
    column = _column(spec, **OPTIONS)
    assert column == Field.from_api(column).to_api()


def test_unknown_type_keeps_its_name() -> None:
    """A type this version does not know is OTHER, and BigQuery's name for it is kept."""
    field = Field.from_api(_column({"type": "VECTOR_OF_THE_FUTURE"}))
    assert (field.type, field.type_name) == (FieldType.OTHER, "VECTOR_OF_THE_FUTURE")


def test_bignumeric_is_not_numeric() -> None:
    """BIGNUMERIC is its own family, not NUMERIC (a patch must not turn one into the other)."""
    assert FieldType.BIGNUMERIC is field_type_of("BIGNUMERIC")


def test_absent_mode_stays_absent() -> None:
    """A column whose JSON has no mode is NULLABLE and goes back without a mode."""
    column = {"name": "c", "type": "DATETIME"}
    field = Field.from_api(column)
    assert (Mode.NULLABLE, column) == (field.mode, field.to_api())


def test_built_fields_carry_no_options() -> None:
    """A field plowline builds gives the plain legacy JSON it always gave."""
    expected = {"name": "c", "type": "INTEGER", "mode": "REQUIRED"}
    assert expected == Field("c", FieldType.INTEGER, Mode.REQUIRED).to_api()


def test_legacy_and_alias_spellings_read_as_the_same_family() -> None:
    """INT64 and INTEGER columns are the same family, so widening sees no type change."""
    table = (Field.from_api({"name": "c", "type": "INT64", "mode": "NULLABLE"}),)
    plan = plan_widening(table, (Field("c", FieldType.INTEGER),))
    assert (plan.is_empty, plan.conflicts) == (True, ())


_UNWRITTEN = [
    {"type": "BYTES"},
    {"type": "BIGNUMERIC", "precision": "40"},
    {"type": "TIME"},
    {"type": "DATETIME"},
    {"type": "GEOGRAPHY"},
    {"type": "RANGE", "rangeElementType": {"type": "TIMESTAMP"}},
    {"type": "INTERVAL"},
    {"type": "SOMETHING_NEW"},
]


@pytest.mark.parametrize("spec", _UNWRITTEN, ids=lambda spec: spec["type"])
def test_plan_reports_a_conflict_and_never_changes_a_hand_made_column(
    spec: dict[str, Any],
) -> None:
    """A needed column whose name a hand-made column holds is a conflict; the column stays as is."""
    column = _column(spec, **OPTIONS)
    table = (Field.from_api(column),)
    needed = Field("hand_made", FieldType.STRING)
    plan = plan_widening(table, (needed,))
    expected_reason = f"hand_made: table has {spec['type']}, schema needs STRING"
    assert ([expected_reason], [column], True) == (
        [c.reason for c in plan.conflicts],
        [f.to_api() for f in plan.schema],
        plan.is_empty,
    )


def test_widening_a_record_holding_bignumeric_keeps_it_and_its_options() -> None:
    """A new sub-field goes into a RECORD; its BIGNUMERIC sub-field and every option stay."""
    money = {"name": "amount", "type": "BIGNUMERIC", "mode": "NULLABLE", "precision": "60"}
    record = {
        "name": "contexts_a",
        "type": "RECORD",
        "mode": "REPEATED",
        "description": "kept",
        "fields": [money, {"name": "x", "type": "STRING", "mode": "NULLABLE", **OPTIONS}],
    }
    needed = Field(
        "contexts_a",
        FieldType.RECORD,
        Mode.REPEATED,
        (Field("amount", FieldType.NUMERIC), Field("y", FieldType.STRING)),
    )
    plan = plan_widening((Field.from_api(record),), (needed,))
    widened = {**record, "fields": [*record["fields"], Field("y", FieldType.STRING).to_api()]}
    assert (["contexts_a.amount"], [widened]) == (
        [c.path for c in plan.conflicts],
        [f.to_api() for f in plan.schema],
    )


def test_missing_fields_takes_unwritten_columns_as_leaves() -> None:
    """A row value under a GEOGRAPHY or unknown column is not a missing field."""
    table = (
        Field.from_api({"name": "where", "type": "GEOGRAPHY"}),
        Field.from_api({"name": "later", "type": "SOMETHING_NEW"}),
    )
    row = {"where": {"type": "Point"}, "later": [1, 2]}
    assert missing_fields(table, row) == []


# -- property: any API field dict survives the round trip ----------------------------------

# RECORDs always come with their fields (BigQuery requires at least one): drawn apart.
_TYPE_NAMES = st.sampled_from(
    [kind.value for kind in FieldType if kind not in (FieldType.OTHER, FieldType.RECORD)]
    + ["INT64", "FLOAT64", "BOOL", "DECIMAL", "BIGDECIMAL", "GEOMETRY_2", "X"]
)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=6,
)
_EXTRA = st.dictionaries(
    st.sampled_from(
        [
            "description",
            "policyTags",
            "maxLength",
            "precision",
            "scale",
            "collation",
            "defaultValueExpression",
            "roundingMode",
            "rangeElementType",
            "dataPolicies",
            "somethingNew",
        ]
    ),
    _JSON,
    max_size=3,
)
_NAMES = st.text("abcXYZ_0", min_size=1, max_size=6)


@st.composite
def _api_fields(draw: st.DrawFn, depth: int = 0) -> dict[str, Any]:
    out: dict[str, Any] = {"name": draw(_NAMES)}
    record = depth < 2 and draw(st.booleans())
    out["type"] = draw(st.sampled_from(["RECORD", "STRUCT"])) if record else draw(_TYPE_NAMES)
    mode = draw(st.sampled_from([None, "NULLABLE", "REQUIRED", "REPEATED"]))
    if mode is not None:
        out["mode"] = mode
    out.update(draw(_EXTRA))
    if record:
        out["fields"] = draw(st.lists(_api_fields(depth + 1), max_size=3))
    return out


@given(_api_fields())
def test_any_api_field_round_trips(column: dict[str, Any]) -> None:
    """Whatever field BigQuery describes, reading and writing it back changes nothing."""
    assert column == Field.from_api(column).to_api()


@given(_api_fields(), _api_fields())
def test_widening_never_alters_a_column_it_does_not_add_to(
    have: dict[str, Any], need: dict[str, Any]
) -> None:
    """A table column the plan does not widen comes back as BigQuery gave it."""
    table = Field.from_api(have)
    plan = plan_widening((table,), (Field.from_api({**need, "name": have["name"]}),))
    [kept] = plan.schema
    if not plan.nested_additions:
        assert have == kept.to_api()
