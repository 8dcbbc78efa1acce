"""FILE_LOADS: NDJSON staged in the storage emulator, loaded by bqemulator load jobs."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from google.cloud import bigquery
from google.cloud.bigquery.retry import DEFAULT_RETRY
from plowline_cloud.clients import bigquery_client
from plowline_cloud.load_jobs import FileLoadSink
from plowline_cloud.row_sink import BigQueryRowSink
from plowline_cloud.table_schema import BigQueryTableSchemaStore
from plowline_core.ports import InsertReason, Row
from plowline_core.testing.clock import FixedClock
from plowline_devstack.endpoints import Endpoints
from plowline_devstack.stack import servers
from plowline_devstack.stack.alone import start_alone

RETRY = DEFAULT_RETRY.with_deadline(30)
BUCKET = "plowline-dead-end"
SCHEMA = [
    bigquery.SchemaField("event_id", "STRING", mode="REQUIRED"),
    bigquery.SchemaField("n", "INTEGER"),
    bigquery.SchemaField("page", "RECORD", fields=[bigquery.SchemaField("url", "STRING")]),
]


@pytest.fixture(scope="module")
def loads_bq(
    cloud_endpoints: Endpoints, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[bigquery.Client]:
    """A corrected bqemulator that reads gs:// load sources from the stack's storage emulator."""
    log = tmp_path_factory.mktemp("loads-bq") / "bigquery.log"
    env = servers.environment(servers.BIGQUERY, cloud_endpoints.storage_url)
    server, endpoints = start_alone(servers.BIGQUERY, cloud_endpoints.project, log, env=env)
    client = bigquery_client(endpoints.project, endpoints.bigquery_url)
    try:
        client.create_dataset("snowplow", exists_ok=True, retry=None, timeout=10)  # type: ignore[arg-type]  # it answers
        yield client
        client.close()
    finally:
        servers.stop(server)


@pytest.fixture
def table(loads_bq: bigquery.Client, table_id: str) -> bigquery.TableReference:
    """A fresh table on the load-capable server."""
    loads_bq.create_table(bigquery.Table(table_id, schema=SCHEMA), retry=RETRY)
    return bigquery.TableReference.from_string(table_id)


def _sink(bq: bigquery.Client, gcs: Any, table: bigquery.TableReference) -> FileLoadSink:
    store = BigQueryTableSchemaStore(
        bq, table, 3600.0, FixedClock(datetime(2024, 1, 1, tzinfo=UTC))
    )
    return FileLoadSink(bq, gcs, BUCKET, table, store, BigQueryRowSink(bq, table, store))


def _row(i: int, n: Any = None) -> Row:
    data = {"event_id": f"e{i:06d}", "n": i if n is None else n, "page": {"url": f"u{i}"}}
    return Row(str(data["event_id"]), data)


def _counts(bq: bigquery.Client, table: bigquery.TableReference) -> tuple[int, int]:
    sql = f"SELECT COUNT(*), COUNT(DISTINCT event_id) FROM `{table.project}.{table.dataset_id}.{table.table_id}`"
    [row] = list(bq.query(sql, retry=RETRY, job_retry=None).result(retry=RETRY, timeout=60))
    return int(row[0]), int(row[1])


def test_file_loads_land_ten_thousand_rows_once(
    loads_bq: bigquery.Client, gcs: Any, table: bigquery.TableReference
) -> None:
    """10,000 rows in two load jobs land exactly once."""
    sink = _sink(loads_bq, gcs, table)
    failures = [
        f
        for start in (0, 5_000)
        for f in sink.insert([_row(i) for i in range(start, start + 5_000)])
    ]
    assert (failures, _counts(loads_bq, table)) == ([], (10_000, 10_000))


def test_file_loads_leave_no_staged_objects(
    loads_bq: bigquery.Client, gcs: Any, table: bigquery.TableReference
) -> None:
    """Staged NDJSON objects are deleted once their load job finished."""
    _sink(loads_bq, gcs, table).insert([_row(1)])
    prefix = f"plowline-loads/{table.table_id}/"
    assert [blob.name for blob in gcs.list_blobs(BUCKET, prefix=prefix)] == []


def test_a_failing_load_is_routed_row_by_row(
    loads_bq: bigquery.Client, gcs: Any, table: bigquery.TableReference
) -> None:
    """A bad row fails the load job; the rows are then inserted one by one and only it fails."""
    rows = [_row(1), _row(2, n="not a number"), _row(3)]
    failures = _sink(loads_bq, gcs, table).insert(rows)
    assert (
        [(f.row.insert_id, f.reason) for f in failures],
        _counts(loads_bq, table),
    ) == ([("e000002", InsertReason.INVALID)], (2, 2))
