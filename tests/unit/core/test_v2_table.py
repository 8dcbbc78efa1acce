"""Specification of the table loader 2.x creates: money NUMERIC, load_tstamp REQUIRED.

The development check compares with 2.x's own table (``table_creation.json``) when
``PLOWLINE_CONFORMANCE_V2`` names that folder.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from plowline_core.event.fields import (
    ATOMIC_COLUMNS,
    MONEY_FIELDS,
    V2_ATOMIC_COLUMNS,
    V2_CLUSTER_BY,
    V2_PARTITION_COLUMN,
)
from plowline_core.schema.field import FieldType, Mode

CONFORMANCE = os.environ.get("PLOWLINE_CONFORMANCE_V2")
_BQ_TYPES = {"INT64": "INTEGER", "FLOAT64": "FLOAT", "BOOL": "BOOLEAN", "STRUCT": "RECORD"}


def test_money_fields_are_numeric() -> None:
    """The eight monetary fields are NUMERIC in 2.x's table."""
    types = {column.name: column.type for column in V2_ATOMIC_COLUMNS}

    assert {types[name] for name in MONEY_FIELDS} == {FieldType.NUMERIC}


def test_load_tstamp_is_required_and_last() -> None:
    """2.x's loader stamps every row, so load_tstamp is REQUIRED; it closes the 129 columns."""
    last = V2_ATOMIC_COLUMNS[-1]

    expected = (129, "load_tstamp", FieldType.TIMESTAMP, Mode.REQUIRED)
    assert expected == (len(V2_ATOMIC_COLUMNS), last.name, last.type, last.mode)


def test_every_other_column_is_1x_s() -> None:
    """Apart from money and load_tstamp, the 2.x table has 1.x's columns in 1.x's order."""
    changed = MONEY_FIELDS | {"load_tstamp"}
    v1 = [column for column in ATOMIC_COLUMNS if column.name not in changed]

    assert [column for column in V2_ATOMIC_COLUMNS if column.name not in changed] == v1


def test_partitioned_on_load_tstamp_and_clustered_by_event_name() -> None:
    """2.x partitions by DAY on load_tstamp and clusters by event_name."""
    assert (V2_PARTITION_COLUMN, V2_CLUSTER_BY) == ("load_tstamp", ("event_name",))


def _expected_table() -> list[Any]:
    if CONFORMANCE is None:
        return [
            pytest.param(
                None,
                marks=pytest.mark.skip(
                    reason="PLOWLINE_CONFORMANCE_V2 is not set: it names the folder of 2.x's "
                    "test vectors (shared/conformance/v2), which may not be redistributed"
                ),
                id="no-conformance-folder",
            )
        ]
    table = json.loads((Path(CONFORMANCE) / "table_creation.json").read_text())
    return [pytest.param(table, id="table_creation")]


@pytest.mark.parametrize("table", _expected_table())
def test_the_2x_table_is_2x_s_own(table: dict[str, Any]) -> None:
    """Development check: every column, type, mode, the partitioning and the clustering."""
    expected = (
        [
            (field["name"], _BQ_TYPES.get(field["type"], field["type"]), field["mode"])
            for field in table["fields_bq_derived"]
        ],
        (table["timePartitioning"]["type"], table["timePartitioning"]["field"]),
        table["clustering"]["fields"],
    )
    assert expected == (
        [(c.name, c.type.value, c.mode.value) for c in V2_ATOMIC_COLUMNS],
        ("DAY", V2_PARTITION_COLUMN),
        list(V2_CLUSTER_BY),
    )
