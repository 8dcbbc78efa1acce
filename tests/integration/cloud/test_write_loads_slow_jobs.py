"""FILE_LOADS against a load job slower than the sink's timeout (``bigquery.slow-load-job``).

Each test starts a storage emulator and a bqemulator reading its load sources from it,
the bqemulator with a fault plan naming ``slow-load-job`` (rate 1), as ``plowline dev up
--faults`` does, and loads through ``FileLoadSink`` with the official clients. The slow
job reads its staged object only when it ends, so a sink that deleted the object while
the job ran would fail the job and hand the rows to its fallback.
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
from google.cloud.bigquery.retry import DEFAULT_RETRY
from plowline_cloud.load_jobs import FileLoadSink
from plowline_cloud.table_schema import BigQueryTableSchemaStore
from plowline_core.ports import Row
from plowline_core.testing.clock import FixedClock
from plowline_core.testing.sinks import InMemoryRowSink
from support.load_servers import load_servers

PROJECT = "plowline-slow-load-sink"
SCHEMA = [bigquery.SchemaField("event_id", "STRING", mode="REQUIRED")]
ROWS = [Row(f"e{i}", {"event_id": f"e{i}"}) for i in range(3)]
SLOW_SECONDS = 4.0
SINK_TIMEOUT = 1.0


@dataclass
class Slow:
    """A bqemulator whose load jobs run slowly, the storage emulator it reads, their clients."""

    bq: bigquery.Client
    gcs: Any
    bucket: str

    def sink(self, table: bigquery.TableReference, fallback: InMemoryRowSink) -> FileLoadSink:
        """Return a FILE_LOADS sink staging in ``bucket`` whose timeout is shorter than a job."""
        store = BigQueryTableSchemaStore(
            self.bq, table, 3600.0, FixedClock(datetime(2024, 1, 1, tzinfo=UTC))
        )
        return FileLoadSink(
            self.bq, self.gcs, self.bucket, table, store, fallback, timeout=SINK_TIMEOUT
        )

    def table(self) -> bigquery.TableReference:
        """Create a fresh table (tables.insert is never faulted)."""
        name = f"{PROJECT}.snowplow.t_{uuid.uuid4().hex[:10]}"
        self.bq.create_table(bigquery.Table(name, schema=SCHEMA), retry=DEFAULT_RETRY)
        return bigquery.TableReference.from_string(name)

    def event_ids(self, table: bigquery.TableReference) -> list[str]:
        """Return every row's event_id (tabledata.list is never faulted)."""
        return sorted(row["event_id"] for row in self.bq.list_rows(table, retry=None))  # type: ignore[arg-type]  # as above

    def staged(self, table: bigquery.TableReference) -> int:
        """Return how many staged objects of ``table`` are left in the bucket."""
        prefix = f"plowline-loads/{table.table_id}/"
        return len(list(self.gcs.list_blobs(self.bucket, prefix=prefix)))

    def load_jobs(self) -> list[tuple[str, Any]]:
        """Return (state, errorResult) of every load job the project ran (jobs.list)."""
        jobs = self.bq.list_jobs(retry=None)  # type: ignore[arg-type]  # never faulted
        return [(job.state, job.error_result) for job in jobs if job.job_type == "load"]


@pytest.fixture
def slow(tmp_path: Path) -> Iterator[Callable[[], Slow]]:
    """``slow()``: both servers, every load job RUNNING for ``SLOW_SECONDS``."""
    with ExitStack() as running:

        def start() -> Slow:
            fault = {"slow-load-job": {"rate": 1.0, "seconds": SLOW_SECONDS}}
            return Slow(
                *running.enter_context(load_servers(tmp_path, PROJECT, {"bigquery": fault}))
            )

        yield start


def test_a_load_job_slower_than_the_timeout_is_waited_on_and_loads_each_row_once(
    slow: Callable[[], Slow],
) -> None:
    """A job RUNNING past the sink's timeout: insert returns once it is DONE, each row once."""
    stack = slow()
    table = stack.table()
    fallback = InMemoryRowSink()

    failures = stack.sink(table, fallback).insert(ROWS)

    expected: tuple[list[Any], list[str], list[str], list[tuple[str, Any]], int]
    expected = ([], ["e0", "e1", "e2"], [], [("DONE", None)], 0)
    actual = (
        failures,
        stack.event_ids(table),
        fallback.insert_ids,
        stack.load_jobs(),  # one job, which read its staged object when it ended
        stack.staged(table),  # deleted once the job was DONE
    )
    assert expected == actual
