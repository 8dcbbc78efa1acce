"""The enriched field table in code (``event.fields``) against the SDK's table in tests/data."""

from __future__ import annotations

import csv
from pathlib import Path

from plowline_core.event.fields import ENRICHED_FIELDS, EnrichedField


def _table(conformance_dir: Path) -> list[dict[str, str]]:
    with (conformance_dir / "enriched_fields.tsv").open(newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t"))


def _as_listed(field: EnrichedField) -> tuple[int, str, bool, str]:
    """Index, name, required, and max length as the table writes them."""
    length = "-" if field.is_entity else str(field.max_length or "")
    return field.index, field.name, field.required, length


def _listed(row: dict[str, str]) -> tuple[int, str, bool, str]:
    required = (
        not row["sdk_type"].startswith("Option[") and "self-describing" not in row["sdk_type"]
    )
    return int(row["index"]), row["name"], required, row["max_length"]


def test_table_lists_the_131_fields(conformance_dir: Path) -> None:
    """The carried table has one row per enriched field, 131 in all."""
    assert len(_table(conformance_dir)) == len(ENRICHED_FIELDS) == 131


def test_code_follows_the_table(conformance_dir: Path) -> None:
    """Every field in code has the table's index, name, required flag and max length."""
    assert [_as_listed(field) for field in ENRICHED_FIELDS] == [
        _listed(row) for row in _table(conformance_dir)
    ]
