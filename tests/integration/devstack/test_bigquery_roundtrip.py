"""Rows with nested and repeated fields survive insertAll and a query unchanged; the events table is provisioned."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from google.cloud import bigquery
from google.cloud.bigquery.retry import DEFAULT_RETRY
from plowline_cloud.clients import bigquery_client
from plowline_core.event.fields import ATOMIC_COLUMNS
from plowline_devstack.stack.lifecycle import LocalStack

RETRY = DEFAULT_RETRY.with_deadline(5.0)
SCHEMA = [
    bigquery.SchemaField("id", "STRING", mode="REQUIRED"),
    bigquery.SchemaField(
        "rec",
        "RECORD",
        fields=[
            bigquery.SchemaField("s", "STRING"),
            bigquery.SchemaField("inner", "RECORD", fields=[bigquery.SchemaField("n", "INTEGER")]),
        ],
    ),
    bigquery.SchemaField(
        "reps",
        "RECORD",
        mode="REPEATED",
        fields=[
            bigquery.SchemaField("f", "FLOAT"),
            bigquery.SchemaField("tags", "STRING", mode="REPEATED"),
        ],
    ),
    bigquery.SchemaField("nums", "INTEGER", mode="REPEATED"),
]


@pytest.fixture(scope="module")
def client(local_stack: LocalStack) -> Iterator[bigquery.Client]:
    """A BigQuery client of the local stack."""
    with bigquery_client(local_stack.endpoints.project, local_stack.endpoints.bigquery_url) as bq:
        yield bq


@pytest.mark.parametrize(
    "row",
    [
        pytest.param(
            {
                "id": "full",
                "rec": {"s": "a", "inner": {"n": 7}},
                "reps": [{"f": 1.5, "tags": ["x", "y"]}, {"f": 2.0, "tags": []}],
                "nums": [1, 2, 3],
            },
            id="all-nested",
        ),
        pytest.param({"id": "empty", "rec": None, "reps": [], "nums": []}, id="empty-nested"),
    ],
)
def test_bigquery_nested_row_round_trips(
    row: dict[str, Any], client: bigquery.Client, local_stack: LocalStack
) -> None:
    """A row with RECORD, nested RECORD and REPEATED fields reads back as it was inserted."""
    table_id = f"{local_stack.project}.{local_stack.dataset}.rt_{uuid.uuid4().hex[:10]}"
    table = client.create_table(bigquery.Table(table_id, schema=SCHEMA), retry=RETRY, timeout=10)
    errors = client.insert_rows_json(table, [row], retry=RETRY, timeout=10)
    no_errors: list[Any] = []
    assert no_errors == errors

    job = client.query(f"SELECT id, rec, reps, nums FROM `{table_id}`", job_retry=None, retry=RETRY)
    actual = [dict(r) for r in job.result(retry=RETRY, timeout=20)]

    assert [row] == actual


def test_bigquery_events_table_has_atomic_columns(
    client: bigquery.Client, local_stack: LocalStack
) -> None:
    """The provisioned events table holds the atomic columns, load_tstamp last."""
    table = client.get_table(local_stack.table_ref, retry=RETRY, timeout=10)

    actual = [(f.name, f.field_type, f.mode) for f in table.schema]

    assert [(c.name, c.type.value, c.mode.value) for c in ATOMIC_COLUMNS] == actual
