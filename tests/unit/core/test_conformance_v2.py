"""Development check: the 2.x column rules against Snowplow's own 2.x test vectors, case by case.

The vectors (Loader 2.2.0 and common-streams 0.24 test suites, transcribed) are under licenses
that do not let us ship them: point ``PLOWLINE_CONFORMANCE_V2`` at the folder holding them
(``naming_typing_v2.json``, ``recovery_columns.json``, ``iglu/``) to run this check; it skips
otherwise. The rules themselves are pinned with our own cases in ``test_schema_major.py``.
Run with ``-s`` to see matched/total per file.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from plowline_cloud.iglu.embedded import EmbeddedRegistry
from plowline_core.iglu.config import EmbeddedConnection, RepositoryRef
from plowline_core.iglu.key import SchemaKey, SchemaVer
from plowline_core.iglu.resolver import Resolver, SchemaNotFound
from plowline_core.schema.ddl_json import InvalidSchema
from plowline_core.schema.entity import ShredProperty
from plowline_core.schema.field import Field
from plowline_core.schema.major import MajorColumn, major_column
from plowline_core.testing.clock import FixedClock

_FOLDER = os.environ.get("PLOWLINE_CONFORMANCE_V2")
pytestmark = pytest.mark.skipif(
    not _FOLDER or not Path(_FOLDER, "naming_typing_v2.json").is_file(),
    reason="PLOWLINE_CONFORMANCE_V2 does not name a folder of 2.x vectors (not redistributable)",
)
_SHRED = {"UnstructEvent": ShredProperty.UNSTRUCT_EVENT, "Context": ShredProperty.CONTEXTS}


def _folder() -> Path:
    assert _FOLDER is not None
    return Path(_FOLDER)


def _resolver(repo: str) -> Resolver:
    path = _folder() / repo
    ref = RepositoryRef(repo, 0.0, (), EmbeddedConnection(str(path)))
    clock = FixedClock(datetime(2026, 1, 1, tzinfo=UTC))
    return Resolver([(ref, EmbeddedRegistry(repo, path))], clock)


def _plain(field: Field) -> dict[str, Any]:
    plain = Field(
        field.name, field.type, field.mode, tuple(Field.from_api(_plain(s)) for s in field.fields)
    )
    return plain.to_api()


def _expected(api: dict[str, Any]) -> dict[str, Any]:
    return _plain(Field.from_api(api))


def _batch(resolver: Resolver, entity: dict[str, Any], subs: list[str]) -> dict[str, Any]:
    """Return {"main": column api or None, "recoveries": [...], "failure": str | None}."""
    shred = _SHRED[entity["entityType"]]
    results: list[tuple[SchemaVer, MajorColumn]] = []
    for sub in subs:
        version = SchemaVer.parse(f"{entity['model']}-{sub}")
        key = SchemaKey(entity["vendor"], entity["schemaName"], "jsonschema", version)
        try:
            column = major_column(key, shred, resolver)
        except InvalidSchema:
            return {"failure": "InvalidSchema"}
        if isinstance(column, SchemaNotFound):
            return {"failure": "IgluError"}
        results.append((version, column))
    mains = [c for _, c in sorted(results, key=lambda p: p[0]) if not c.recovered]
    main = mains[-1].field if mains else None
    recoveries = sorted(
        (_plain(c.field) for _, c in results if c.recovered and c.field is not None),
        key=lambda api: api["name"],
    )
    return {
        "main": None if main is None else _plain(main),
        "recoveries": recoveries,
        "failure": None,
    }


def _naming_verdict(case: dict[str, Any]) -> bool | None:
    expected = case["expected"]
    if "fields" not in expected:
        return None  # clash and message cases: the row builder's business (test_transform_major)
    resolver = _resolver(case["resolver_repo"])
    got = _batch(resolver, case["input"]["entity"], case["input"]["subVersionsInBatch"])
    if expected["failures"]:
        return got["failure"] == expected["failures"][0]["failure"].split(".")[-1]
    if got["failure"] is not None:
        return False
    fields = expected["fields"]
    main = _expected(fields[0]["bq_column_derived"]) if fields else None
    recoveries = sorted(
        (_expected(r["bq_column_derived"]) for f in fields for r in f["recoveries"]),
        key=lambda api: api["name"],
    )
    return got["main"] == main and got["recoveries"] == recoveries


def _recovery_verdict(case: dict[str, Any]) -> bool:
    resolver = _resolver("iglu/common-streams")
    got = _batch(resolver, case["input"]["entity"], case["input"]["subVersionsInBatch"])
    recoveries = sorted(
        (_expected(r["bq_column_derived"]) for r in case["expected_recoveries"]),
        key=lambda api: api["name"],
    )
    main = got["main"]
    return (
        got["failure"] is None
        and main is not None
        and main["name"] == case["expected_column"]
        and got["recoveries"] == recoveries
    )


def test_naming_typing_v2_cases() -> None:
    """Every column case of naming_typing_v2.json gives the column 2.x gives."""
    cases = json.loads((_folder() / "naming_typing_v2.json").read_text())["cases"]
    verdicts = {case["id"]: _naming_verdict(case) for case in cases}
    judged = {k: v for k, v in verdicts.items() if v is not None}
    print(f"\nnaming_typing_v2.json: {sum(judged.values())}/{len(judged)} column cases matched")
    assert [k for k, v in judged.items() if not v] == []


def test_recovery_columns_cases() -> None:
    """Every case of recovery_columns.json gives 2.x's main and recovery columns."""
    cases = json.loads((_folder() / "recovery_columns.json").read_text())["cases"]
    verdicts = {case["id"]: _recovery_verdict(case) for case in cases}
    print(f"\nrecovery_columns.json: {sum(verdicts.values())}/{len(verdicts)} cases matched")
    assert [k for k, v in verdicts.items() if not v] == []
