"""The never-fitting case: a column an operator made by hand, with a type the events do not fit.

The story: Acme's legacy order system wrote orders to BigQuery before Snowplow did, with
numeric order ids. An operator, ahead of the first ``com.acme/legacy_order`` 1-0-0 events,
added ``unstruct_event_com_acme_legacy_order_1_0_0`` to the events table by hand from that
old DDL: ``order_id`` INTEGER. The schema (and every event since the migration) says
``orderId`` is text (``LO-2024-000123``). So each such event is valid, yet never fits:

1. the loader's insert is refused (``Cannot convert value to integer``) → a failed insert;
   the column exists, so the loader announces no type (it does so for missing fields only);
2. nothing retypes the column: the mutator only widens (asked, it would report a conflict,
   ``409`` from ``POST /v1/columns``);
3. the repeater holds the row until ``etl_tstamp + backoffPeriod``, tries once more, is
   refused again and writes a ``loader_recovery_error`` bad row to the dead-end bucket.

Notes:
    The column is the one the mutator would add for the schema, with one sub-field
    retyped, so the only thing wrong with it is that type.
"""

from __future__ import annotations

import json
from pathlib import Path

from google.cloud import bigquery
from plowline_core.iglu.key import SchemaKey
from plowline_core.schema.columns import column_field
from plowline_core.schema.entity import ShredProperty
from plowline_core.schema.field import Field, FieldType

from plowline_devstack.bigquery_retry import BIGQUERY_RETRY
from plowline_devstack.demo.traffic import LEGACY_ORDER

CONFLICT_COLUMN = "unstruct_event_com_acme_legacy_order_1_0_0"
CONFLICT_FIELD = "order_id"
_HAND_TYPE = FieldType.INTEGER
_TIMEOUT_S = 20.0


def hand_made_column(registry: Path) -> Field:
    """Return the operator's legacy_order column: the schema's own, ``order_id`` INTEGER.

    ``registry`` is the directory holding ``schemas/`` (the example resolver's ``iglu``).
    """
    key = SchemaKey.parse(LEGACY_ORDER)
    schema = json.loads((registry / "schemas" / key.to_path()).read_text())
    column = column_field(key, schema, ShredProperty.UNSTRUCT_EVENT)
    fields = tuple(
        Field(f.name, _HAND_TYPE, f.mode, f.fields) if f.name == CONFLICT_FIELD else f
        for f in column.fields
    )
    return Field(column.name, column.type, column.mode, fields)


def add_by_hand(client: bigquery.Client, table_ref: str, column: Field) -> bool:
    """Add ``column`` to the table as an operator would (tables.patch); False if it is there."""
    table = client.get_table(table_ref, retry=BIGQUERY_RETRY, timeout=_TIMEOUT_S)
    if any(field.name == column.name for field in table.schema):
        return False
    table.schema = [*table.schema, bigquery.SchemaField.from_api_repr(column.to_api())]
    client.update_table(table, ["schema"], retry=BIGQUERY_RETRY, timeout=_TIMEOUT_S)
    return True


def describe(column: Field) -> str:
    """Return one line saying what the operator made and why the events do not fit it."""
    return (
        f"{column.name}.{CONFLICT_FIELD} {_HAND_TYPE.value}, made by hand; "
        "com.acme/legacy_order 1-0-0 says orderId is a string"
    )
