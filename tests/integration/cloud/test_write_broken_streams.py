"""Exactly-once against the fault ``append-stream-broken-after-apply`` of the local stack.

A bqemulator of its own is started with ``--faults`` (as ``plowline dev up --faults``):
half of the applied appends are answered with UNAVAILABLE instead of their response, as
when BigQuery's stream breaks after the rows were written. Each batch is retried as a
redelivery would, until it commits; every row must then be in the table once.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from google.cloud import bigquery
from google.cloud.bigquery_storage_v1 import BigQueryWriteClient
from plowline_cloud.table_schema import BigQueryTableSchemaStore
from plowline_cloud.write_api import write_client
from plowline_cloud.write_api_pending import ExactlyOnceSink, ensure_ledger
from plowline_core.errors import TransientError
from plowline_core.ports import Row
from plowline_core.testing.clock import FixedClock
from plowline_devstack import probes, servers
from plowline_devstack.clients import bigquery_client
from plowline_devstack.endpoints import Endpoints

PROJECT = "plowline-broken-streams"
DATASET = "snowplow"
BATCHES, ROWS = 12, 25


class Faulty:
    """A bqemulator whose AppendRows streams break after half of the applied appends."""

    def __init__(self, bq: bigquery.Client, writes: BigQueryWriteClient) -> None:
        self.bq = bq
        self.writes = writes


@pytest.fixture
def faulty(tmp_path: Path) -> Iterator[Faulty]:
    """Start the bqemulator with ``append-stream-broken-after-apply`` at rate 0.5."""
    plan = tmp_path / "faults.json"
    faults = {"append-stream-broken-after-apply": {"rate": 0.5}}
    plan.write_text(json.dumps({"seed": 11, "bigquery": faults}))
    ports = {"port": servers.free_port(), "grpc_port": servers.free_port()}
    argv = [*servers.command(servers.BIGQUERY, "127.0.0.1", ports, PROJECT, None)]
    server = servers.launch(
        [*argv, "--faults", str(plan)], servers.BIGQUERY, ports, tmp_path / "bq.log", daemon=False
    )
    endpoints = Endpoints(PROJECT, 0, ports["port"], ports["grpc_port"], 0)
    bq = bigquery_client(endpoints)
    writes = write_client(f"127.0.0.1:{ports['grpc_port']}")
    try:
        deadline = time.monotonic() + 30
        while not probes.answers(servers.BIGQUERY, endpoints):
            if time.monotonic() > deadline or not servers.is_alive(server):
                pytest.fail(f"bqemulator:\n{servers.log_tail(server.log)}", pytrace=False)
            time.sleep(0.1)
        bq.create_dataset(DATASET, exists_ok=True)
        yield Faulty(bq, writes)
    finally:
        bq.close()
        writes.transport.close()
        servers.stop(server)


def _rows(batch: int) -> list[Row]:
    ids = [f"b{batch:02d}-{n:03d}" for n in range(ROWS)]
    return [Row(event_id, {"event_id": event_id, "n": batch}) for event_id in ids]


def test_broken_append_streams_commit_every_row_once(faulty: Faulty) -> None:
    """12 batches, half the appends' streams broken after apply, retried: 300 rows, no copy."""
    name = f"{PROJECT}.{DATASET}.events"
    schema = [
        bigquery.SchemaField("event_id", "STRING", "REQUIRED"),
        bigquery.SchemaField("n", "INTEGER"),
    ]
    table = faulty.bq.create_table(bigquery.Table(name, schema=schema))
    ensure_ledger(faulty.bq, f"{name}_ledger")
    store = BigQueryTableSchemaStore(
        faulty.bq, table.reference, 3600.0, FixedClock(datetime(2024, 1, 1, tzinfo=UTC))
    )
    sink = ExactlyOnceSink(
        faulty.writes, faulty.bq, table.reference, f"{name}_ledger", store, sleep=lambda _: None
    )
    retries = 0
    for batch in range(BATCHES):
        for _ in range(20):  # each failure is a redelivery of the same batch
            try:
                sink.insert(_rows(batch))
                break
            except TransientError:
                retries += 1
    sql = f"SELECT COUNT(*), COUNT(DISTINCT event_id) FROM `{name}`"
    [row] = list(faulty.bq.query(sql).result())
    assert ((row[0], row[1]), retries < 20 * BATCHES) == ((BATCHES * ROWS, BATCHES * ROWS), True)
