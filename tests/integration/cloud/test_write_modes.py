"""The Storage Write API sinks (default stream, exactly-once) against the local bqemulator."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

import pytest
from google.cloud import bigquery
from google.cloud.bigquery.retry import DEFAULT_RETRY
from google.cloud.bigquery_storage_v1 import BigQueryWriteClient
from plowline_cloud.table_schema import BigQueryTableSchemaStore
from plowline_cloud.write_api import write_client
from plowline_cloud.write_api_committed import WriteApiRowSink
from plowline_cloud.write_api_pending import ExactlyOnceSink, ensure_ledger
from plowline_core.ports import InsertReason, Row
from plowline_core.testing.clock import FixedClock
from plowline_devstack.endpoints import Endpoints

RETRY = DEFAULT_RETRY.with_deadline(30)
SCHEMA = [
    bigquery.SchemaField("event_id", "STRING", mode="REQUIRED"),
    bigquery.SchemaField("collector_tstamp", "TIMESTAMP"),
    bigquery.SchemaField("n", "INTEGER"),
    bigquery.SchemaField(
        "ctx",
        "RECORD",
        mode="REPEATED",
        fields=[bigquery.SchemaField("id", "STRING"), bigquery.SchemaField("x", "FLOAT")],
    ),
    bigquery.SchemaField("page", "RECORD", fields=[bigquery.SchemaField("url", "STRING")]),
]


@pytest.fixture(scope="module")
def writes(cloud_endpoints: Endpoints) -> Iterator[BigQueryWriteClient]:
    """A Storage Write client on the local bqemulator's gRPC port."""
    client = write_client(cloud_endpoints.bigquery_grpc_target)
    yield client
    client.transport.close()


@pytest.fixture
def table(bq: bigquery.Client, table_id: str) -> bigquery.TableReference:
    """A fresh events-like table with nested and repeated RECORDs."""
    bq.create_table(bigquery.Table(table_id, schema=SCHEMA), retry=RETRY)
    return bigquery.TableReference.from_string(table_id)


def _store(bq: bigquery.Client, table: bigquery.TableReference) -> BigQueryTableSchemaStore:
    return BigQueryTableSchemaStore(bq, table, 3600.0, FixedClock(datetime(2024, 1, 1, tzinfo=UTC)))


def _row(i: int, **extra: Any) -> Row:
    data = {
        "event_id": f"e{i:06d}",
        "collector_tstamp": "2024-05-01T10:00:00.123456Z",
        "n": i,
        "ctx": [{"id": f"c{i}", "x": 0.5}, {"id": "second"}],
        "page": {"url": f"https://example.com/{i}"},
        **extra,
    }
    return Row(str(data["event_id"]), data)


def _counts(bq: bigquery.Client, table: bigquery.TableReference) -> tuple[int, int]:
    sql = f"SELECT COUNT(*), COUNT(DISTINCT event_id) FROM `{table.project}.{table.dataset_id}.{table.table_id}`"
    [row] = list(bq.query(sql, retry=RETRY, job_retry=None).result(retry=RETRY, timeout=60))
    return int(row[0]), int(row[1])


def _select(
    bq: bigquery.Client, table: bigquery.TableReference, columns: str
) -> list[dict[str, Any]]:
    sql = (
        f"SELECT {columns} FROM `{table.project}.{table.dataset_id}.{table.table_id}` "
        "ORDER BY event_id"
    )
    job = bq.query(sql, retry=RETRY, job_retry=None)
    return [dict(row) for row in job.result(retry=RETRY, timeout=60)]


def test_default_stream_lands_ten_thousand_rows_once(
    bq: bigquery.Client, writes: BigQueryWriteClient, table: bigquery.TableReference
) -> None:
    """10,000 rows appended to the default stream in bounded requests land exactly once."""
    sink = WriteApiRowSink(writes, table, _store(bq, table), max_request_bytes=256 * 1024)
    failures = [
        f
        for start in range(0, 10_000, 2_500)
        for f in sink.insert([_row(i) for i in range(start, start + 2_500)])
    ]
    assert (failures, _counts(bq, table)) == ([], (10_000, 10_000))


def test_default_stream_keeps_nested_and_repeated_values(
    bq: bigquery.Client, writes: BigQueryWriteClient, table: bigquery.TableReference
) -> None:
    """RECORD and REPEATED RECORD values and TIMESTAMPs come back as they were sent."""
    WriteApiRowSink(writes, table, _store(bq, table)).insert([_row(1)])
    expected = [
        {
            "collector_tstamp": datetime(2024, 5, 1, 10, 0, 0, 123456, tzinfo=UTC),
            "ctx": [{"id": "c1", "x": 0.5}, {"id": "second", "x": None}],
            "page": {"url": "https://example.com/1"},
        }
    ]
    assert expected == _select(bq, table, "collector_tstamp, ctx, page")


def test_default_stream_reports_unknown_fields_without_sending_them(
    bq: bigquery.Client, writes: BigQueryWriteClient, table: bigquery.TableReference
) -> None:
    """A row naming a column the table lacks is an UNKNOWN_FIELD failure; the others land."""
    failures = WriteApiRowSink(writes, table, _store(bq, table)).insert(
        [_row(1), _row(2, extra_col=1)]
    )
    assert (
        [(f.row.insert_id, f.reason) for f in failures],
        _counts(bq, table),
    ) == ([("e000002", InsertReason.UNKNOWN_FIELD)], (1, 1))


def test_default_stream_continues_after_the_table_is_widened(
    bq: bigquery.Client, writes: BigQueryWriteClient, table: bigquery.TableReference
) -> None:
    """After the mutator adds a column, rows filling it are appended with a rebuilt descriptor."""
    store = _store(bq, table)
    sink = WriteApiRowSink(writes, table, store)
    sink.insert([_row(1)])
    live = bq.get_table(table, retry=RETRY)
    live.schema = [*live.schema, bigquery.SchemaField("added", "STRING")]
    bq.update_table(live, ["schema"], retry=RETRY)
    failures = sink.insert([_row(2, added="yes")])
    assert (failures, [r["added"] for r in _select(bq, table, "added")]) == ([], [None, "yes"])


def test_default_mode_reuses_one_stream_for_every_insert(
    bq: bigquery.Client, writes: BigQueryWriteClient, table: bigquery.TableReference
) -> None:
    """Ten inserts open one COMMITTED stream (CreateWriteStream is a quota), not ten."""
    sink = WriteApiRowSink(writes, table, _store(bq, table))
    for n in range(10):
        sink.insert([_row(n)])
    assert (sink.streams_created, _counts(bq, table)) == (1, (10, 10))


def test_default_mode_gives_concurrent_inserts_a_stream_each(
    bq: bigquery.Client, writes: BigQueryWriteClient, table: bigquery.TableReference
) -> None:
    """Four threads inserting at once on one sink: every row once, at most four streams."""
    sink = WriteApiRowSink(writes, table, _store(bq, table))
    start = threading.Barrier(4)

    def insert(thread: int) -> None:
        start.wait()
        for batch in range(5):
            first = thread * 100 + batch * 20
            sink.insert([_row(n) for n in range(first, first + 20)])

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(insert, range(4)))
    assert (_counts(bq, table), 1 <= sink.streams_created <= 4) == ((400, 400), True)


def test_default_mode_moves_to_a_new_stream_when_its_stream_was_finalized(
    bq: bigquery.Client, writes: BigQueryWriteClient, table: bigquery.TableReference
) -> None:
    """Its stream finalized behind its back: the next rows go to a new stream, each once."""
    sink = WriteApiRowSink(writes, table, _store(bq, table))
    sink.insert([_row(1), _row(2)])
    [stream] = sink.streams
    writes.finalize_write_stream(name=stream)
    failures = sink.insert([_row(3), _row(4)])
    assert (failures, sink.streams_created, _counts(bq, table)) == ([], 2, (4, 4))


@pytest.fixture
def ledger(bq: bigquery.Client, table_id: str) -> Iterator[str]:
    """A fresh ledger table for the exactly-once sink."""
    name = f"{table_id}_ledger"
    ensure_ledger(bq, name)
    yield name
    bq.delete_table(name, not_found_ok=True)


def test_exactly_once_lands_ten_thousand_rows_once(
    bq: bigquery.Client, writes: BigQueryWriteClient, table: bigquery.TableReference, ledger: str
) -> None:
    """10,000 rows through PENDING streams and the ledger land exactly once."""
    sink = ExactlyOnceSink(
        writes, bq, table, ledger, _store(bq, table), max_request_bytes=512 * 1024
    )
    failures = [
        f
        for start in range(0, 10_000, 5_000)
        for f in sink.insert([_row(i) for i in range(start, start + 5_000)])
    ]
    assert (failures, _counts(bq, table)) == ([], (10_000, 10_000))


def test_exactly_once_skips_a_redelivered_batch(
    bq: bigquery.Client, writes: BigQueryWriteClient, table: bigquery.TableReference, ledger: str
) -> None:
    """The same rows inserted again (a crash between commit and ack) are not added twice."""
    sink = ExactlyOnceSink(writes, bq, table, ledger, _store(bq, table))
    rows = [_row(i) for i in range(50)]
    sink.insert(rows)
    sink.insert([*rows, _row(50)])
    assert _counts(bq, table) == (51, 51)


def test_exactly_once_completes_a_batch_prepared_and_ledgered_before_a_crash(
    bq: bigquery.Client, writes: BigQueryWriteClient, table: bigquery.TableReference, ledger: str
) -> None:
    """A crash after the ledger commit but before the events commit: redelivery lands rows once."""
    sink = ExactlyOnceSink(writes, bq, table, ledger, _store(bq, table))
    rows = [_row(i) for i in range(20)]
    prepared = sink.prepare("batch-1", "0", rows)
    _ledger_only(sink, prepared)
    before = _counts(bq, table)
    sink.insert(rows)
    assert (before, _counts(bq, table)) == ((0, 0), (20, 20))


def _ledger_only(sink: ExactlyOnceSink, prepared: Any) -> None:
    """Run ``commit`` up to the events commit, as a process that dies there would."""
    original = sink._batch_commit

    def commit(table: bigquery.TableReference, streams: list[str]) -> None:
        if table.table_id.endswith("_ledger"):
            original(table, streams)

    sink._batch_commit = commit  # type: ignore[method-assign]
    sink.commit([prepared])
    sink._batch_commit = original  # type: ignore[method-assign]
