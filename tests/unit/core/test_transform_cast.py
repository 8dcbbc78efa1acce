"""Casting JSON to BigQuery values, checked against every upstream cast vector we carry."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from plowline_core.schema.entity import ColumnMode
from plowline_core.schema.field import Field, FieldType, Mode
from plowline_core.transform.cast import (
    CastError,
    MissingInValue,
    NotAnArray,
    WrongType,
    cast,
    caster_for,
    compact_json,
)
from plowline_core.transform.scalar import expected_name

VECTORS = Path(__file__).resolve().parents[2] / "data" / "conformance" / "vectors"
VECTOR_FILES = sorted(VECTORS.glob("cast_*.json"))

# loader 2.x type names → ours (the ``expected`` text of a WrongType differs only in spelling)
_V2_KINDS = {
    "String": FieldType.STRING,
    "Integer": FieldType.INTEGER,
    "Long": FieldType.INTEGER,
    "Double": FieldType.FLOAT,
    "Decimal": FieldType.NUMERIC,
    "Boolean": FieldType.BOOLEAN,
    "Timestamp": FieldType.TIMESTAMP,
    "Date": FieldType.DATE,
    "Json": FieldType.JSON,
    "Struct": FieldType.RECORD,
}

# Vectors plowline deliberately does not follow, with the outcome it gives instead.
DIFFERENT: dict[str, tuple[str, Any, list[dict[str, Any]]]] = {
    "cast_016": (
        "deviation: a lone null-in-REQUIRED is a bad row, never a silently NULL entity",
        None,
        [{"error": "WrongType", "value": None, "expected": "STRING"}],
    ),
    "cast_030": (
        "insertAll takes ISO strings, not epoch micros",
        "2022-02-02T01:02:03.123000Z",
        [],
    ),
    "cast_031": (
        "insertAll takes ISO strings, not epoch micros",
        "2022-02-02T09:02:03.123000Z",
        [],
    ),
    "cast_032": ("insertAll takes ISO dates, not epoch days", "2022-02-02", []),
    "cast_040": (
        "BigQuery INTEGER is INT64; v2's int32 Integer is not a column type",
        2147483648,
        [],
    ),
    "cast_043": ("Field carries no NUMERIC precision/scale", 123.123, []),
    "cast_044": ("Field carries no NUMERIC precision/scale", 1234567890, []),
    "cast_050": ("Field carries no NUMERIC precision/scale", 12.1234, []),
    "cast_051": ("Field carries no NUMERIC precision/scale", 123456789.12, []),
    "cast_052": ("Field carries no NUMERIC precision/scale", 1e-05, []),
}


def _v2_field(name: str, spec: dict[str, Any], nullability: str) -> Field:
    kind = spec["kind"]
    if kind == "Array":
        return _v2_field(name, spec["element"], "Required").with_mode(Mode.REPEATED)
    subs = tuple(_v2_field(s["name"], s["type"], s["nullability"]) for s in spec.get("fields", ()))
    mode = Mode.REQUIRED if nullability == "Required" else Mode.NULLABLE
    return Field(name, _V2_KINDS[kind], mode, subs)


def _load(path: Path) -> tuple[Field, ColumnMode, dict[str, Any]]:
    vector = json.loads(path.read_text())
    spec = vector["field"]
    if isinstance(spec["type"], str):
        return Field.from_api(spec), ColumnMode.FULL, vector
    return _v2_field(spec["name"], spec["type"], spec["nullability"]), ColumnMode.MAJOR, vector


def _error_json(error: CastError) -> dict[str, Any]:
    if isinstance(error, MissingInValue):
        return {"error": "MissingInValue", "key": error.key, "value": error.value}
    return {"error": type(error).__name__, "value": error.value, "expected": error.expected}


def _expected_errors(vector: dict[str, Any], mode: ColumnMode) -> list[dict[str, Any]]:
    # 2.x names the expected type as schema-ddl does; a BigQuery type loses Integer vs Long
    # and a Decimal's precision, so compare through our type's 2.x name.
    out = []
    for item in vector.get("expected_error", []):
        item = dict(item)
        if "expected" in item:
            kind = item["expected"].split("(")[0]
            if kind in _V2_KINDS:
                item["expected"] = expected_name(_V2_KINDS[kind], mode)
        out.append(item)
    return out


def _outcome(path: Path) -> tuple[Any, list[dict[str, Any]]]:
    field, mode, vector = _load(path)
    result = cast(field, vector["value"], mode)
    return result.value, [_error_json(e) for e in result.errors]


@pytest.mark.parametrize(
    "path", [pytest.param(p, id=p.stem) for p in VECTOR_FILES if p.stem not in DIFFERENT]
)
def test_cast_vector_is_followed(path: Path) -> None:
    """Each upstream cast vector we follow gives exactly its expected value or errors."""
    _, mode, vector = _load(path)
    expected = (vector.get("expected"), _expected_errors(vector, mode))
    assert expected == _outcome(path)


@pytest.mark.parametrize("stem", [pytest.param(s, id=s) for s in sorted(DIFFERENT)])
def test_cast_vector_deliberately_different(stem: str) -> None:
    """Each vector we deliberately do not follow gives the documented plowline outcome."""
    _, value, errors = DIFFERENT[stem]
    assert (value, errors) == _outcome(VECTORS / f"{stem}.json")


def test_cast_vector_counts() -> None:
    """All 54 cast vectors carried are checked: 44 followed, 10 deliberately different."""
    passed = sum(
        1
        for p in VECTOR_FILES
        if p.stem not in DIFFERENT
        and (_load(p)[2].get("expected"), _expected_errors(_load(p)[2], _load(p)[1])) == _outcome(p)
    )
    expected = (54, 44, 10)
    assert expected == (len(VECTOR_FILES), passed, len(DIFFERENT))


def test_required_missing_in_major_mode_is_wrong_type() -> None:
    """In major mode a missing REQUIRED key is WrongType(null, "String"), as loader 2.x reports it."""
    field = Field(
        "r", FieldType.RECORD, Mode.NULLABLE, (Field("a", FieldType.STRING, Mode.REQUIRED),)
    )
    assert (WrongType(None, "String"),) == cast(field, {}, ColumnMode.MAJOR).errors


def test_not_an_array_names_the_item_type() -> None:
    """A REPEATED INTEGER given a string reports NotAnArray with the item type."""
    field = Field("v", FieldType.INTEGER, Mode.REPEATED)
    assert (NotAnArray("x", "INTEGER"),) == cast(field, "x").errors


def test_errors_accumulate_across_nested_records_and_arrays() -> None:
    """Every problem inside nested records and array items is reported, in field order."""
    inner = Field(
        "arr", FieldType.RECORD, Mode.REPEATED, (Field("n", FieldType.INTEGER, Mode.REQUIRED),)
    )
    field = Field("r", FieldType.RECORD, Mode.NULLABLE, (Field("b", FieldType.BOOLEAN), inner))
    value = {"b": "yes", "arr": [{"n": 1}, {"n": "2"}, {}]}
    expected = (
        WrongType("yes", "BOOLEAN"),
        WrongType("2", "INTEGER"),
        MissingInValue("n", {}),
    )
    assert expected == cast(field, value).errors


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(2.0, 2, id="integral-float"),
        pytest.param(2**63, None, id="beyond-int64"),
        pytest.param(True, None, id="boolean-is-not-integer"),
    ],
)
def test_integer_accepts_only_int64_integral_numbers(value: Any, expected: Any) -> None:
    """INTEGER takes integral numbers within int64 and nothing else."""
    assert expected == cast(Field("n", FieldType.INTEGER), value).value


def test_float_rejects_booleans() -> None:
    """FLOAT takes numbers but not JSON booleans."""
    assert (WrongType(True, "FLOAT"),) == cast(Field("f", FieldType.FLOAT), True).errors


def test_record_matches_normalised_sub_field_names() -> None:
    """A sub-field named by its normalised name still finds the camelCase JSON key."""
    field = Field(
        "r",
        FieldType.RECORD,
        Mode.NULLABLE,
        (Field("target_url", FieldType.STRING, Mode.REQUIRED),),
    )
    expected = {"target_url": "http://x"}
    assert expected == cast(field, {"targetUrl": "http://x"}).value


def test_caster_is_compiled_once_per_field() -> None:
    """The same field and mode give the very same compiled caster."""
    field = Field("r", FieldType.RECORD, Mode.NULLABLE, (Field("a", FieldType.STRING),))
    assert caster_for(field) is caster_for(
        Field("r", FieldType.RECORD, Mode.NULLABLE, (Field("a", FieldType.STRING),))
    )


def test_compact_json_handles_huge_integers() -> None:
    """Integers beyond 64 bits still become JSON text."""
    expected = "[18446744073709551616]"
    assert expected == compact_json([2**64])
