"""Both Write API sinks against the fault ``append-stream-broken-after-apply`` of the local stack.

A bqemulator of its own is started with ``--faults`` (as ``plowline dev up --faults``):
half of the applied appends are answered with UNAVAILABLE instead of their response, as
when BigQuery's stream breaks after the rows were written. Each batch is retried as a
redelivery would, until the sink accepts it; every row must then be in the table once.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.cloud import bigquery
from google.cloud.bigquery_storage_v1 import BigQueryWriteClient
from google.cloud.bigquery_storage_v1.services.big_query_write.transports.grpc import (
    BigQueryWriteGrpcTransport,
)
from plowline_cloud.clients import bigquery_client
from plowline_cloud.table_schema import BigQueryTableSchemaStore
from plowline_cloud.write_api_committed import WriteApiRowSink
from plowline_cloud.write_api_pending import ExactlyOnceSink, ensure_ledger
from plowline_core.errors import TransientError
from plowline_core.ports import Row
from plowline_core.testing.clock import FixedClock
from plowline_devstack.stack import servers
from plowline_devstack.stack.alone import start_alone

PROJECT = "plowline-broken-streams"
DATASET = "snowplow"
BATCHES, ROWS = 12, 25


class FirstRequests(grpc.StreamStreamClientInterceptor):  # type: ignore[misc]  # untyped
    """Record the stream each AppendRows call names in its first request ("" if none)."""

    def __init__(self) -> None:
        self.named: list[str] = []

    def intercept_stream_stream(
        self, continuation: Callable[..., Any], details: Any, requests: Iterator[Any]
    ) -> Any:
        """Pass the call on, watching its requests."""
        return continuation(details, self._watch(requests))

    def _watch(self, requests: Iterator[Any]) -> Iterator[Any]:
        first: str | None = None
        for request in requests:
            if first is None:
                first = str(request.write_stream)
                self.named.append(first)
            yield request
        if first is None:
            self.named.append("")


class Faulty:
    """A bqemulator whose AppendRows streams break after half of the applied appends."""

    def __init__(self, bq: bigquery.Client, target: str) -> None:
        self.bq = bq
        self.calls = FirstRequests()
        channel = grpc.intercept_channel(grpc.insecure_channel(target), self.calls)
        self.writes = BigQueryWriteClient(transport=BigQueryWriteGrpcTransport(channel=channel))  # type: ignore[no-untyped-call]


@pytest.fixture
def faulty(tmp_path: Path) -> Iterator[Faulty]:
    """Start the bqemulator with ``append-stream-broken-after-apply`` at rate 0.5."""
    plan = tmp_path / "faults.json"
    faults = {"append-stream-broken-after-apply": {"rate": 0.5}}
    plan.write_text(json.dumps({"seed": 11, "bigquery": faults}))
    server, endpoints = start_alone(
        servers.BIGQUERY, PROJECT, tmp_path / "bq.log", extra_args=["--faults", str(plan)]
    )
    bq = bigquery_client(endpoints.project, endpoints.bigquery_url)
    faulty = Faulty(bq, endpoints.bigquery_grpc_target)
    try:
        bq.create_dataset(DATASET, exists_ok=True)
        yield faulty
    finally:
        bq.close()
        faulty.writes.transport.close()
        servers.stop(server)


def _rows(batch: int) -> list[Row]:
    ids = [f"b{batch:02d}-{n:03d}" for n in range(ROWS)]
    return [Row(event_id, {"event_id": event_id, "n": batch}) for event_id in ids]


def _store(faulty: Faulty, table: bigquery.Table) -> BigQueryTableSchemaStore:
    clock = FixedClock(datetime(2024, 1, 1, tzinfo=UTC))
    return BigQueryTableSchemaStore(faulty.bq, table.reference, 3600.0, clock)


def _table(faulty: Faulty, name: str) -> bigquery.Table:
    schema = [
        bigquery.SchemaField("event_id", "STRING", "REQUIRED"),
        bigquery.SchemaField("n", "INTEGER"),
    ]
    return faulty.bq.create_table(bigquery.Table(name, schema=schema))


def _counts(faulty: Faulty, name: str) -> tuple[int, int]:
    sql = f"SELECT COUNT(*), COUNT(DISTINCT event_id) FROM `{name}`"
    [row] = list(faulty.bq.query(sql).result())
    return int(row[0]), int(row[1])


def test_broken_append_streams_leave_no_copy_in_the_at_least_once_sink(faulty: Faulty) -> None:
    """12 batches of 5 pipelined appends, half the streams broken after apply: 300 rows, no copy."""
    name = f"{PROJECT}.{DATASET}.events_default"
    table = _table(faulty, name)
    sink = WriteApiRowSink(
        faulty.writes,
        table.reference,
        _store(faulty, table),
        max_request_rows=5,
        sleep=lambda _: None,
    )
    retries = 0
    for batch in range(BATCHES):
        for _ in range(20):  # each failure is a redelivery of the same batch
            try:
                failures = sink.insert(_rows(batch))
                break
            except TransientError:
                retries += 1
        assert failures == []
    assert (_counts(faulty, name), retries) == ((BATCHES * ROWS, BATCHES * ROWS), 0)


def test_a_broken_append_stream_is_not_reopened_by_the_client_library(faulty: Faulty) -> None:
    """Every AppendRows call names its stream first: none is a library retry of a used iterator."""
    name = f"{PROJECT}.{DATASET}.events_retry"
    table = _table(faulty, name)
    sink = WriteApiRowSink(
        faulty.writes,
        table.reference,
        _store(faulty, table),
        max_request_rows=5,
        sleep=lambda _: None,
    )
    for batch in range(BATCHES):
        sink.insert(_rows(batch))
    assert [stream for stream in faulty.calls.named if not stream] == []


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
