"""The ``slow-load-job`` fault, seen through the official google-cloud-bigquery client.

Each test starts a storage emulator and a bqemulator reading its ``gs://`` load sources
from it, the bqemulator with ``--faults FILE`` naming ``slow-load-job`` (rate 1), as
``plowline dev up --faults`` does, and loads a staged NDJSON object with a load job.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from google.api_core import exceptions as gexc
from google.cloud import bigquery
from google.cloud.bigquery.retry import DEFAULT_RETRY
from support.load_servers import load_servers
from support.timing import wait_for

PROJECT = "plowline-slow-loads"
SCHEMA = [bigquery.SchemaField("id", "STRING")]
SLOW_SECONDS = 3.0


@dataclass
class Slow:
    """A bqemulator whose load jobs run slowly, the storage emulator it reads, their clients."""

    bq: bigquery.Client
    gcs: Any
    bucket: str

    def table(self) -> bigquery.TableReference:
        """Create a fresh table (tables.insert is never faulted)."""
        name = f"{PROJECT}.snowplow.s_{uuid.uuid4().hex[:10]}"
        self.bq.create_table(bigquery.Table(name, schema=SCHEMA), retry=DEFAULT_RETRY)
        return bigquery.TableReference.from_string(name)

    def stage(self, *ids: str) -> str:
        """Stage one NDJSON row per id; return the object's ``gs://`` URI."""
        name = f"staged/{uuid.uuid4().hex}.ndjson"
        body = "".join(json.dumps({"id": i}) + "\n" for i in ids)
        self.gcs.bucket(self.bucket).blob(name).upload_from_string(body)
        return f"gs://{self.bucket}/{name}"

    def unstage(self, uri: str) -> None:
        """Delete a staged object."""
        self.gcs.bucket(self.bucket).blob(uri.removeprefix(f"gs://{self.bucket}/")).delete()

    def load(self, uri: str, table: bigquery.TableReference, job_id: str) -> bigquery.LoadJob:
        """Create a load job of ``uri`` into ``table`` (jobs.insert, one try)."""
        config = bigquery.LoadJobConfig(
            source_format=bigquery.SourceFormat.NEWLINE_DELIMITED_JSON, schema=SCHEMA
        )
        return self.bq.load_table_from_uri(uri, table, job_id=job_id, job_config=config, retry=None)  # type: ignore[arg-type]  # one try

    def ids(self, table: bigquery.TableReference) -> list[str]:
        """Return the ``id`` column of every row (tabledata.list is never faulted)."""
        return sorted(row["id"] for row in self.bq.list_rows(table, retry=None))  # type: ignore[arg-type]  # as above


@pytest.fixture
def slow(tmp_path: Path) -> Iterator[Callable[[float], Slow]]:
    """``slow(seconds)``: both servers, load jobs staying RUNNING for ``seconds``."""
    with ExitStack() as running:

        def start(seconds: float) -> Slow:
            fault = {"slow-load-job": {"rate": 1.0, "seconds": seconds}}
            return Slow(
                *running.enter_context(load_servers(tmp_path, PROJECT, {"bigquery": fault}))
            )

        yield start


def _watch(
    stack: Slow, job_id: str, table: bigquery.TableReference
) -> list[tuple[float, str, int]]:
    """Poll jobs.get until the job is DONE: (seconds since start, state, rows in the table)."""
    started = time.monotonic()
    seen: list[tuple[float, str, int]] = []

    def done() -> bool:
        job = stack.bq.get_job(job_id, retry=None)  # type: ignore[arg-type]  # one try each
        seen.append((time.monotonic() - started, str(job.state), len(stack.ids(table))))
        return seen[-1][1] == "DONE"

    assert wait_for(done, SLOW_SECONDS + 30), seen
    return seen


def test_a_slow_load_job_is_running_for_its_seconds_then_done_with_its_rows(
    slow: Callable[[float], Slow],
) -> None:
    """slow-load-job: jobs.get answers RUNNING, no row loaded, for N s; then DONE, rows loaded."""
    stack = slow(SLOW_SECONDS)
    table = stack.table()
    job_id = f"j_{uuid.uuid4().hex}"

    inserted = stack.load(stack.stage("a", "b"), table, job_id).state
    seen = _watch(stack, job_id, table)

    before_the_end = {(state, rows) for at, state, rows in seen if at < SLOW_SECONDS - 0.5}
    done_after = seen[-1][0]
    job = stack.bq.get_job(job_id, retry=None)  # type: ignore[arg-type]  # one try
    expected = ("RUNNING", {("RUNNING", 0)}, True, None, ["a", "b"])
    actual = (
        inserted,
        before_the_end,
        SLOW_SECONDS - 0.5 <= done_after <= SLOW_SECONDS + 5,
        job.error_result,
        stack.ids(table),
    )
    assert expected == actual, seen


def test_a_slow_load_job_reads_its_source_when_it_ends(slow: Callable[[float], Slow]) -> None:
    """slow-load-job: a source deleted while the job is RUNNING fails the job, no row loaded."""
    stack = slow(SLOW_SECONDS)
    table = stack.table()
    job_id = f"j_{uuid.uuid4().hex}"
    uri = stack.stage("a")
    stack.load(uri, table, job_id)

    stack.unstage(uri)
    _watch(stack, job_id, table)

    job = stack.bq.get_job(job_id, retry=None)  # type: ignore[arg-type]  # one try
    expected: tuple[bool, list[str]] = (True, [])
    assert expected == (job.error_result is not None, stack.ids(table)), job.error_result


def test_a_running_job_id_is_taken(slow: Callable[[float], Slow]) -> None:
    """slow-load-job: jobs.insert again with the id of a RUNNING job answers 409 duplicate."""
    stack = slow(SLOW_SECONDS)
    table = stack.table()
    job_id = f"j_{uuid.uuid4().hex}"
    uri = stack.stage("a")
    stack.load(uri, table, job_id)

    with pytest.raises(gexc.Conflict) as caught:
        stack.load(uri, table, job_id)  # the retry a client makes after a lost answer
    _watch(stack, job_id, table)

    expected = ("duplicate", ["a"])
    assert expected == (str(caught.value.errors[0]["reason"]), stack.ids(table))
