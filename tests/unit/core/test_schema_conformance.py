"""Upstream Snowplow vectors for field names, column names and JSON Schema → BigQuery."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from plowline_cloud.iglu.embedded import EmbeddedRegistry
from plowline_core.iglu.config import EmbeddedConnection, RepositoryRef
from plowline_core.iglu.key import SchemaKey, SchemaVer
from plowline_core.iglu.resolver import Resolver
from plowline_core.schema.columns import column_field
from plowline_core.schema.entity import ColumnMode, ShredProperty
from plowline_core.schema.field import Field, FieldType, Mode
from plowline_core.schema.major import MajorColumn, major_column
from plowline_core.schema.mapping import field_from_schema, normalized
from plowline_core.schema.mapping_v2 import element_of_v2, field_from_schema_v2, normalized_v2
from plowline_core.schema.names import column_name, normalize_field_name
from plowline_core.testing.clock import FixedClock

PASSED, FAILED, DIFFERENT = "passed", "failed", "different"
Verdict = tuple[str, str, str]  # (vector id, status, detail)

# Vectors we deliberately do not follow, with the reason (also in the module docstrings).
_DIFFERENT = {
    "schema_to_field_031#context": "BigQuery has no arrays of arrays: the inner array is JSON",
    "schema_to_field_032#context": "BigQuery has no arrays of arrays: the inner array is JSON",
}
_RECOVERED = re.compile(r"_recovered_")
_URI = re.compile(r"^iglu:([^/]+)/([^/]+)/([^/]+)/(\d+)-(\d+)-(\d+)$")
_DDL_TYPES = {
    "String": FieldType.STRING,
    "Boolean": FieldType.BOOLEAN,
    "Integer": FieldType.INTEGER,
    "Long": FieldType.INTEGER,
    "Double": FieldType.FLOAT,
    "Decimal": FieldType.NUMERIC,
    "Json": FieldType.JSON,
    "Date": FieldType.DATE,
    "Timestamp": FieldType.TIMESTAMP,
}


def _vectors(conformance_dir: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    for path in sorted((conformance_dir / "vectors").glob("schema_to_field_*.json")):
        yield path.stem, json.loads(path.read_text())


def _key(uri: str) -> SchemaKey:
    # Not SchemaKey.parse: one upstream vector uses a name with '.', which Iglu forbids.
    match = _URI.match(uri)
    assert match is not None, uri
    version = SchemaVer(int(match[4]), int(match[5]), int(match[6]))
    return SchemaKey(match[1], match[2], match[3], version)


def _api(field: Field | None) -> dict[str, Any] | None:
    return None if field is None else field.to_api()


def _expected(data: dict[str, Any] | None) -> dict[str, Any] | None:
    # The vectors spell types in standard SQL (STRUCT, INT64): compare type families.
    return None if data is None else _plain(Field.from_api(data)).to_api()


def _plain(field: Field) -> Field:
    return Field(field.name, field.type, field.mode, tuple(_plain(sub) for sub in field.fields))


def _ddl_to_field(ddl: dict[str, Any]) -> Field | None:
    """Translate a schema-ddl parquet Field (vector JSON) to BigQuery; None for arrays of arrays."""
    kind = ddl["type"]
    mode = Mode.REQUIRED if ddl.get("nullability") == "Required" else Mode.NULLABLE
    if kind["kind"] == "Array":
        kind, mode = kind["element"], Mode.REPEATED
        if kind["kind"] == "Array":
            return None
    if kind["kind"] == "Struct":
        subs = [_ddl_to_field(sub) for sub in kind["fields"]]
        if any(sub is None for sub in subs):
            return None
        return Field(ddl["name"], FieldType.RECORD, mode, tuple(s for s in subs if s is not None))
    return Field(ddl["name"], _DDL_TYPES[kind["kind"]], mode)


def _verdict(vector_id: str, expected: Any, actual: Any) -> Verdict:
    if vector_id in _DIFFERENT:
        return (vector_id, DIFFERENT, _DIFFERENT[vector_id])
    status = PASSED if expected == actual else FAILED
    return (vector_id, status, "" if status == PASSED else f"expected {expected}, got {actual}")


def _call_args(call: str) -> tuple[str, bool]:
    match = re.match(
        r'Field\.build\("([^"]+)", schema, (?:required=|enforceValuePresence=)?(\w+)', call
    )
    assert match is not None, call
    return match[1], match[2] == "true"


def _check_v1(vector_id: str, data: dict[str, Any]) -> list[Verdict]:
    name, required = _call_args(data["call"])
    shred = data.get("shred_property")
    if shred is None:
        built = field_from_schema(name, data["jsonschema"], required)
        verdicts = [_verdict(vector_id, _expected(data["expected_field"]), _api(built))]
        if "expected_field_normalized" in data:
            expected = _expected(data["expected_field_normalized"])
            verdicts.append(_verdict(f"{vector_id}#normalized", expected, _api(normalized(built))))
        return verdicts
    key, prop = _key(data["schema_uri"]), ShredProperty(shred.upper())
    column = column_field(key, data["jsonschema"], prop, ColumnMode.FULL)
    expected = _expected(data["expected_field_normalized"])
    return [_verdict(f"{vector_id}#column", expected, _api(column))]


def _check_v2_build(vector_id: str, data: dict[str, Any]) -> list[Verdict]:
    name, required = _call_args(data["call"])
    built = field_from_schema_v2(name, data["jsonschema"], required)
    verdicts = [_verdict(vector_id, _expected(data["expected_field"]), _api(built))]
    if "expected_ddl_normalized" in data and built is not None:
        expected = _api(_ddl_to_field(data["expected_ddl_normalized"]))
        verdicts.append(_verdict(f"{vector_id}#normalized", expected, _api(normalized_v2(built))))
    if "expected_ddl_as_context_column" in data:
        expected_column = _ddl_to_field(data["expected_ddl_as_context_column"])
        element = element_of_v2(data["jsonschema"])
        actual = (
            None if element is None else Field(name, element.type, Mode.REPEATED, element.fields)
        )
        verdicts.append(_verdict(f"{vector_id}#context", _api(expected_column), _api(actual)))
    return verdicts


def _check_v2(vector_id: str, data: dict[str, Any]) -> list[Verdict]:
    if vector_id in _DIFFERENT:
        return [_verdict(vector_id, None, None)]
    if "input_ddl" in data:
        return [
            _verdict(f"{vector_id}[{i}]", _api(_ddl_to_field(out)), _api(normalized_v2(source)))
            for i, (raw, out) in enumerate(
                zip(data["input_ddl"], data["expected_ddl_normalized"], strict=True)
            )
            if (source := _ddl_to_field(raw)) is not None
        ]
    if "schema_uri" in data:
        key, prop = _key(data["schema_uri"]), ShredProperty(data["shred_property"].upper())
        column = column_field(key, data["jsonschema"], prop, ColumnMode.MAJOR)
        return [_verdict(f"{vector_id}#column", _expected(data["expected_field"]), _api(column))]
    return _check_v2_build(vector_id, data)


def _schema_verdicts(conformance_dir: Path) -> list[Verdict]:
    verdicts: list[Verdict] = []
    for vector_id, data in _vectors(conformance_dir):
        is_v1 = data["module"].startswith("schema-ddl bigquery")
        verdicts += _check_v1(vector_id, data) if is_v1 else _check_v2(vector_id, data)
    return verdicts


def _column_verdicts(conformance_dir: Path) -> list[Verdict]:
    cases = json.loads((conformance_dir / "vectors" / "column_names.json").read_text())
    verdicts: list[Verdict] = []
    for i, case in enumerate(cases):
        vector_id = f"column_names[{i}]"
        if _RECOVERED.search(case["expected_column"]):
            verdicts.append(_recovered_verdict(vector_id, case, conformance_dir))
            continue
        mode = ColumnMode.FULL if case["loader"].startswith("v1") else ColumnMode.MAJOR
        shred = ShredProperty(case["shred_property"].upper())
        actual = column_name(_key(case["schema_uri"]), shred, mode)
        verdicts.append(_verdict(vector_id, case["expected_column"], actual))
    return verdicts


def _recovered_verdict(vector_id: str, case: dict[str, Any], conformance_dir: Path) -> Verdict:
    """Check a recovery column name against the schemas the upstream test loaded."""
    repo = conformance_dir / "v2" / "iglu" / "common-streams"
    if not repo.is_dir():
        return (vector_id, DIFFERENT, "the upstream test schemas (v2/iglu) are absent")
    ref = RepositoryRef("cs", 0, (), EmbeddedConnection(str(repo)))
    clock = FixedClock(datetime(2026, 1, 1, tzinfo=UTC))
    resolver = Resolver([(ref, EmbeddedRegistry("cs", repo))], clock)
    shred = ShredProperty(case["shred_property"].upper())
    column = major_column(_key(case["schema_uri"]), shred, resolver)
    actual = column.column if isinstance(column, MajorColumn) else repr(column)
    return _verdict(vector_id, case["expected_column"], actual)


def _name_verdicts(conformance_dir: Path) -> list[Verdict]:
    data = json.loads((conformance_dir / "vectors" / "field_name_normalization.json").read_text())
    return [
        _verdict(
            f"field_name_normalization[{i}]", case["expected"], normalize_field_name(case["input"])
        )
        for i, case in enumerate(data["cases"])
    ]


def _failures(verdicts: list[Verdict]) -> list[Verdict]:
    return [verdict for verdict in verdicts if verdict[1] == FAILED]


def test_field_name_vectors_all_pass(conformance_dir: Path) -> None:
    """Every field-name normalisation vector gives the expected BigQuery name."""
    assert _failures(_name_verdicts(conformance_dir)) == []


def test_column_name_vectors_all_pass(conformance_dir: Path) -> None:
    """Every v1 and v2 column-name vector, recovery columns included, gives the expected column."""
    assert _failures(_column_verdicts(conformance_dir)) == []


def test_schema_to_field_vectors_all_pass(conformance_dir: Path) -> None:
    """Every v1 and v2 schema → field vector gives the expected BigQuery field."""
    assert _failures(_schema_verdicts(conformance_dir)) == []


def test_conformance_counts(conformance_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every vector file is checked, and the deliberately different ones are few and known."""
    verdicts = _name_verdicts(conformance_dir) + _column_verdicts(conformance_dir)
    verdicts += _schema_verdicts(conformance_dir)
    counts = Counter(status for _, status, _ in verdicts)
    with capsys.disabled():
        print(f"\nconformance: checked={len(verdicts)} {dict(counts)}")
        for vector_id, status, detail in verdicts:
            if status == DIFFERENT:
                print(f"  deliberately different: {vector_id}: {detail}")
    assert (counts[FAILED], counts[DIFFERENT]) == (0, 2)
