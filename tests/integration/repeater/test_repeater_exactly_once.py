"""Exactly-once through the repeater: a row the loader refused lands once, whoever writes it.

In exactly-once mode the loader commits rows behind a ledger of event ids. A row it
refuses (a column the mutator has not added yet) goes to the repeater. When the loader's
batch comes back (a crash before its ack, a Pub/Sub redelivery) and the row fits by then,
the loader writes it again: only if the repeater's insert went into the same ledger is
that second write dropped. Found by the chaos e2e run (5 duplicate rows in 2,000 events).

A copy arriving while the repeater's re-insert is in flight passed the ledger check too
(2 duplicates in 50,000 events): the loader now marks the ids it handed over.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from google.cloud import bigquery
from google.cloud.bigquery.retry import DEFAULT_RETRY
from plowline_cloud.clients import bigquery_client
from plowline_cloud.table_schema import BigQueryTableSchemaStore
from plowline_cloud.write_api import write_client
from plowline_cloud.write_api_pending import LEDGER_FIELDS, ExactlyOnceSink, ensure_ledger
from plowline_core.config import LoadKind, LoadMode, WriteStreamKind
from plowline_core.distinct_rows import DistinctRowSink
from plowline_core.ports import InsertReason, Row
from plowline_core.testing.clock import FixedClock
from plowline_devstack.stack.lifecycle import LocalStack
from plowline_repeater.bootstrap import reinsert_sink

RETRY = DEFAULT_RETRY.with_deadline(30)
EXACTLY_ONCE = LoadMode(LoadKind.STORAGE_WRITE_API, stream=WriteStreamKind.EXACTLY_ONCE)


@pytest.fixture
def table(local_stack: LocalStack) -> Iterator[str]:
    """A fresh table (event_id, n) and its ledger; dropped after the test."""
    bq = bigquery_client(local_stack.project, local_stack.endpoints.bigquery_url)
    name = f"{local_stack.project}.{local_stack.dataset}.eo_{uuid.uuid4().hex[:10]}"
    schema = [
        bigquery.SchemaField("event_id", "STRING", mode="REQUIRED"),
        bigquery.SchemaField("n", "INTEGER"),
    ]
    bq.create_table(bigquery.Table(name, schema=schema), retry=RETRY)
    ensure_ledger(bq, f"{name}_ledger")
    yield name
    bq.delete_table(name, not_found_ok=True)
    bq.delete_table(f"{name}_ledger", not_found_ok=True)


def _loader_sink(stack: LocalStack, bq: bigquery.Client, table: str) -> ExactlyOnceSink:
    """The loader's exactly-once sink, with a fresh view of the table's schema."""
    store = BigQueryTableSchemaStore(
        bq, table, 3600.0, FixedClock(datetime(2026, 1, 1, tzinfo=UTC))
    )
    writes = write_client(stack.endpoints.bigquery_grpc_target)
    return ExactlyOnceSink(writes, bq, table, f"{table}_ledger", store, sleep=lambda _: None)


def test_repeater_reinsert_then_loader_redelivery_commits_one_row(
    local_stack: LocalStack, table: str
) -> None:
    """Refused for a missing column, re-inserted by the repeater, redelivered to the loader: 1 row."""
    bq = bigquery_client(local_stack.project, local_stack.endpoints.bigquery_url)
    row = Row("e1", {"event_id": "e1", "n": 1, "extra": "new column"})
    refused = _loader_sink(local_stack, bq, table).insert([row])
    live = bq.get_table(table, retry=RETRY)
    live.schema = [*live.schema, bigquery.SchemaField("extra", "STRING")]  # the mutator's work
    bq.update_table(live, ["schema"], retry=RETRY)
    store = BigQueryTableSchemaStore(bq, table, 1.0, FixedClock(datetime(2026, 1, 1, tzinfo=UTC)))
    repeated = reinsert_sink(
        EXACTLY_ONCE, bq, table, store, local_stack.endpoints.bigquery_grpc_target
    ).insert([row])
    redelivered = _loader_sink(local_stack, bq, table).insert([row])
    sql = f"SELECT COUNT(*) FROM `{table}` WHERE event_id = 'e1'"
    [count] = list(bq.query(sql, retry=RETRY, job_retry=None).result(retry=RETRY, timeout=60))
    expected = ([InsertReason.UNKNOWN_FIELD], [], [], 1)
    actual = ([f.reason for f in refused], repeated, redelivered, int(count[0]))
    assert expected == actual


def test_repeater_reinsert_of_a_failed_insert_delivered_twice_commits_one_row(
    local_stack: LocalStack, table: str
) -> None:
    """One failed insert delivered twice (a Pub/Sub duplicate) in one re-insert: 1 row, not 2."""
    bq = bigquery_client(local_stack.project, local_stack.endpoints.bigquery_url)
    row = Row("e2", {"event_id": "e2", "n": 2})
    again = Row("e2", {"event_id": "e2", "n": 2})
    store = BigQueryTableSchemaStore(bq, table, 1.0, FixedClock(datetime(2026, 1, 1, tzinfo=UTC)))
    sink = reinsert_sink(EXACTLY_ONCE, bq, table, store, local_stack.endpoints.bigquery_grpc_target)
    failures = sink.insert([row, again])
    sql = f"SELECT COUNT(*) FROM `{table}` WHERE event_id = 'e2'"
    [count] = list(bq.query(sql, retry=RETRY, job_retry=None).result(retry=RETRY, timeout=60))
    expected: tuple[list[object], int] = ([], 1)
    assert expected == (failures, int(count[0]))


def _count(bq: bigquery.Client, table: str, event_id: str) -> int:
    sql = f"SELECT COUNT(*) FROM `{table}` WHERE event_id = '{event_id}'"
    [count] = list(bq.query(sql, retry=RETRY, job_retry=None).result(retry=RETRY, timeout=60))
    return int(count[0])


def _add_column(bq: bigquery.Client, table: str, name: str) -> None:
    live = bq.get_table(table, retry=RETRY)
    live.schema = [*live.schema, bigquery.SchemaField(name, "STRING")]  # the mutator's work
    bq.update_table(live, ["schema"], retry=RETRY)


def test_loader_copy_racing_the_repeaters_reinsert_of_a_handed_over_id_commits_one_row(
    local_stack: LocalStack, table: str
) -> None:
    """Copy 2 reaching the loader while the repeater re-inserts copy 1's failed insert: 1 row."""
    bq = bigquery_client(local_stack.project, local_stack.endpoints.bigquery_url)
    row = Row("e3", {"event_id": "e3", "n": 3, "extra": "new column"})
    first = _loader_sink(local_stack, bq, table)
    refused = first.insert([row])  # copy 1: the column is missing
    first.hand_over([f.row.insert_id for f in refused])  # after the failed-insert publish
    _add_column(bq, table, "extra")
    store = BigQueryTableSchemaStore(bq, table, 1.0, FixedClock(datetime(2026, 1, 1, tzinfo=UTC)))
    reinsert = reinsert_sink(
        EXACTLY_ONCE, bq, table, store, local_stack.endpoints.bigquery_grpc_target
    )
    assert isinstance(reinsert, DistinctRowSink)
    repeater = reinsert.wrapped
    assert isinstance(repeater, ExactlyOnceSink)
    loader = _loader_sink(local_stack, bq, table)
    # Both check the ledger before either commits.
    by_loader = loader.prepare("loader-batch", "0", [row])
    by_repeater = repeater.prepare("repeater-batch", "0", [row])
    loader.commit([by_loader])
    repeater.commit([by_repeater])
    expected = ([InsertReason.UNKNOWN_FIELD], (), ("e3",), 1)
    actual = (
        [f.reason for f in refused],
        by_loader.event_ids,
        by_repeater.event_ids,
        _count(bq, table, "e3"),
    )
    assert expected == actual


def test_a_ledger_without_the_kind_column_is_migrated_and_takes_hand_overs(
    local_stack: LocalStack, table: str
) -> None:
    """A ledger created before hand-overs gets ``kind`` added; its rows entries still count."""
    bq = bigquery_client(local_stack.project, local_stack.endpoints.bigquery_url)
    ledger = f"{table}_ledger"
    bq.delete_table(ledger, retry=RETRY)
    old = [f for f in LEDGER_FIELDS if f.name != "kind"]
    schema = [bigquery.SchemaField.from_api_repr(f.to_api()) for f in old]
    bq.create_table(bigquery.Table(ledger, schema=schema), retry=RETRY)
    ensure_ledger(bq, ledger)
    columns = [field.name for field in bq.get_table(ledger, retry=RETRY).schema]
    sink = _loader_sink(local_stack, bq, table)
    landed = sink.insert([Row("e4", {"event_id": "e4", "n": 4})])
    sink.hand_over(["e5"])
    again = _loader_sink(local_stack, bq, table)
    prepared = again.prepare(
        "b", "0", [Row("e4", {"event_id": "e4", "n": 4}), Row("e5", {"event_id": "e5", "n": 5})]
    )
    expected = ([f.name for f in LEDGER_FIELDS], [], (), 1, 0)
    actual = (columns, landed, prepared.event_ids, _count(bq, table, "e4"), _count(bq, table, "e5"))
    assert expected == actual
