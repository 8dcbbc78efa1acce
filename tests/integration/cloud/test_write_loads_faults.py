"""FILE_LOADS against the local stack's faults: a staged file that cannot be deleted, a lost jobs.insert answer.

Each test starts a storage emulator and a bqemulator reading its load sources from it,
both with one fault plan (``--faults``), as ``plowline dev up --faults`` does, and loads
through ``FileLoadSink`` with the official clients.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from google.cloud import bigquery
from plowline_cloud.load_jobs import FileLoadSink
from plowline_cloud.row_sink import BigQueryRowSink
from plowline_cloud.table_schema import BigQueryTableSchemaStore
from plowline_core.ports import Row
from plowline_core.testing.clock import FixedClock
from support.load_servers import load_servers

PROJECT = "plowline-load-faults"
SCHEMA = [bigquery.SchemaField("event_id", "STRING", mode="REQUIRED")]
ROWS = [Row(f"e{i}", {"event_id": f"e{i}"}) for i in range(3)]


@dataclass
class Faulty:
    """A storage emulator and a bqemulator loading from it, one fault plan, their clients."""

    bq: bigquery.Client
    gcs: Any
    bucket: str

    def sink(self, table: bigquery.TableReference) -> FileLoadSink:
        """Return a FILE_LOADS sink staging in ``bucket``, insertAll as its fallback."""
        store = BigQueryTableSchemaStore(
            self.bq, table, 3600.0, FixedClock(datetime(2024, 1, 1, tzinfo=UTC))
        )
        fallback = BigQueryRowSink(self.bq, table, store)
        return FileLoadSink(self.bq, self.gcs, self.bucket, table, store, fallback)

    def table(self) -> bigquery.TableReference:
        """Create a fresh table (tables.insert is never faulted)."""
        name = f"{PROJECT}.snowplow.t_{uuid.uuid4().hex[:10]}"
        return self.bq.create_table(bigquery.Table(name, schema=SCHEMA), retry=None).reference  # type: ignore[arg-type]  # never faulted

    def event_ids(self, table: bigquery.TableReference) -> list[str]:
        """Return every row's event_id (tabledata.list is never faulted)."""
        return sorted(row["event_id"] for row in self.bq.list_rows(table, retry=None))  # type: ignore[arg-type]  # as above

    def staged(self, table: bigquery.TableReference) -> int:
        """Return how many staged objects of ``table`` are left in the bucket."""
        prefix = f"plowline-loads/{table.table_id}/"
        return len(list(self.gcs.list_blobs(self.bucket, prefix=prefix)))


@pytest.fixture
def faulty(tmp_path: Path) -> Iterator[Callable[[dict[str, Any]], Faulty]]:
    """``faulty(plan)``: both servers started with the fault file ``plan``."""
    with ExitStack() as running:
        yield lambda plan: Faulty(*running.enter_context(load_servers(tmp_path, PROJECT, plan)))


def test_a_staged_file_that_cannot_be_deleted_keeps_the_load(
    faulty: Callable[[dict[str, Any]], Faulty],
) -> None:
    """storage.delete-forbidden: insert returns, each row once; the staged file stays."""
    stack = faulty({"storage": {"delete-forbidden": {"rate": 1.0}}})
    table = stack.table()

    failures = stack.sink(table).insert(ROWS)

    assert (failures, stack.event_ids(table), stack.staged(table)) == ([], ["e0", "e1", "e2"], 1)


def test_a_lost_jobs_insert_answer_loads_the_rows_once(
    faulty: Callable[[dict[str, Any]], Faulty],
) -> None:
    """bigquery.response-lost-after-write on jobs.insert: the 409 is resolved, each row once."""
    stack = faulty({"bigquery": {"response-lost-after-write": {"rate": 1.0}}})
    table = stack.table()

    failures = stack.sink(table).insert(ROWS)

    assert (failures, stack.event_ids(table)) == ([], ["e0", "e1", "e2"])
