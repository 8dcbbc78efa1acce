"""An events table with hand-made columns of every type: what the tiers share (a plugin).

Registered once by the root conftest (``pytest_plugins``). ``hand_made_table`` is a fresh
events table on the local stack: the atomic columns, then ``HAND_MADE``, the columns an
analyst added by hand (BYTES, BIGNUMERIC, TIME, DATETIME, GEOGRAPHY, JSON, RANGE, INTERVAL,
a RECORD of such fields, and a GEOGRAPHY under ``CLASH``, the name the mutator would give
the ``CHECKOUT`` entity). ``hand_made(columns)`` picks those out of a table's columns.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from google.cloud import bigquery
from plowline_cloud.clients import bigquery_client
from plowline_core.event.fields import ATOMIC_COLUMNS

from support.configs import bigquery_config, write_json

if TYPE_CHECKING:
    from plowline_devstack.stack.lifecycle import LocalStack

EXAMPLES = Path(__file__).resolve().parents[2] / "libs/devstack/src/plowline_devstack/examples"
CHECKOUT = "iglu:com.acme/checkout_started/jsonschema/1-0-0"
CLASH = "unstruct_event_com_acme_checkout_started_1_0_0"
HAND_MADE: list[dict[str, Any]] = [
    {
        "name": "raw_bytes",
        "type": "BYTES",
        "mode": "NULLABLE",
        "description": "by hand",
        "maxLength": "16",
    },
    {
        "name": "big_amount",
        "type": "BIGNUMERIC",
        "mode": "NULLABLE",
        "precision": "50",
        "scale": "10",
        "roundingMode": "ROUND_HALF_EVEN",
    },
    {"name": "at_time", "type": "TIME", "mode": "NULLABLE"},
    {"name": "local_at", "type": "DATETIME", "mode": "NULLABLE"},
    {"name": "place", "type": "GEOGRAPHY", "mode": "NULLABLE"},
    {"name": "doc", "type": "JSON", "mode": "NULLABLE"},
    {"name": "span", "type": "RANGE", "mode": "NULLABLE", "rangeElementType": {"type": "DATE"}},
    {"name": "wait", "type": "INTERVAL", "mode": "NULLABLE"},
    {
        "name": "notes",
        "type": "RECORD",
        "mode": "REPEATED",
        "fields": [
            {"name": "at", "type": "DATETIME", "mode": "NULLABLE"},
            {"name": "amount", "type": "BIGNUMERIC", "mode": "NULLABLE", "precision": "60"},
        ],
    },
    {"name": CLASH, "type": "GEOGRAPHY", "mode": "NULLABLE", "description": "not an entity"},
]
HAND_MADE_NAMES = {column["name"] for column in HAND_MADE}
_EVENT_ID = bigquery.SchemaField("event_id", "STRING")


@dataclass(frozen=True)
class TypedTable:
    """A fresh events table with the hand-made columns, and config files naming it."""

    stack: LocalStack
    table_ref: str
    root: Path

    def config_file(self, load: dict[str, Any]) -> Path:
        """Write a bigquery_config for this table and ``load``; return its path."""
        path = self.root / f"config-{uuid.uuid4().hex[:6]}.json"
        config = bigquery_config(
            name="hand-made columns",
            project=self.stack.project,
            dataset=self.stack.dataset,
            table=self.table_ref.rsplit(".", 1)[1],
            load=load,
        )
        return write_json(path, config)

    @property
    def resolver_file(self) -> Path:
        """A resolver config reading the example Iglu repository."""
        resolver = json.loads((EXAMPLES / "resolver.json").read_text())
        resolver["data"]["repositories"][0]["connection"]["embedded"]["path"] = str(
            EXAMPLES / "iglu"
        )
        path = self.root / "resolver.json"
        path.write_text(json.dumps(resolver))
        return path

    def client(self) -> bigquery.Client:
        """A BigQuery client of the local stack."""
        return bigquery_client(self.stack.project, self.stack.endpoints.bigquery_url)

    def columns(self) -> dict[str, dict[str, Any]]:
        """The table's columns as BigQuery describes them, by name."""
        table = self.client().get_table(self.table_ref)
        return {field.name: field.to_api_repr() for field in table.schema}

    def event_ids(self) -> set[str]:
        """The event ids in the table."""
        rows = self.client().list_rows(self.table_ref, selected_fields=[_EVENT_ID])
        return {row["event_id"] for row in rows}


def hand_made(columns: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Return the hand-made columns among ``columns`` (``TypedTable.columns``), in order."""
    return [column for name, column in columns.items() if name in HAND_MADE_NAMES]


@pytest.fixture
def hand_made_table(local_stack: LocalStack, tmp_path: Path) -> TypedTable:
    """A fresh events table: the atomic columns, then the hand-made ones."""
    table_ref = f"{local_stack.project}.{local_stack.dataset}.typed_{uuid.uuid4().hex[:10]}"
    columns = [column.to_api() for column in ATOMIC_COLUMNS] + HAND_MADE
    schema = [bigquery.SchemaField.from_api_repr(column) for column in columns]
    rig = TypedTable(local_stack, table_ref, tmp_path)
    rig.client().create_table(bigquery.Table(table_ref, schema=schema))
    return rig
