"""A Write API client killed or frozen mid-append leaves the BigQuery stand-in answering others.

Real BigQuery never lets one client's death stall another client. A stand-in of its own
is started; a child process (``tests/support/append_child.py``) opens more AppendRows
connections than the stand-in has worker threads, each sending requests of 500 rows
without end (the official client, as the loader's exactly-once sink calls it), and is
SIGKILLed (its connections reset) or SIGSTOPped (alive but silent: no request, no ping
answered) while they are busy. Then REST calls (tables.get, insertAll, a query) and a
second Write API client (create, append, finalize, commit) must each answer within a few
seconds. And tables.patch widenings racing Write API commits on one table (the mutator
and the exactly-once loader) must all go through: a commit run on the event loop
while a widening held its lock froze the whole stand-in.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from google.cloud import bigquery
from google.cloud.bigquery.retry import DEFAULT_RETRY
from google.cloud.bigquery_storage_v1 import BigQueryWriteClient, types
from plowline_cloud.clients import bigquery_client
from plowline_cloud.write_api import write_client
from plowline_cloud.write_api_proto import RowEncoder
from plowline_devstack.stack import servers
from plowline_devstack.stack.alone import start_alone
from support.append_child import FIELDS

PROJECT = "plowline-dead-writer"
DATASET = "snowplow"
CHILD = Path(__file__).resolve().parents[2] / "support" / "append_child.py"
STREAMS = min(32, (os.cpu_count() or 1) + 4) + 2
"""More connections than the worker threads Python gives an event loop by default."""
ROWS = 500
ANSWER_S = 5.0
"""How long a call of another client may take after the writer died."""
RETRY = DEFAULT_RETRY.with_deadline(ANSWER_S)


@dataclass(frozen=True, slots=True)
class StandIn:
    """A BigQuery stand-in of this module, its clients and its events table."""

    bq: bigquery.Client
    writes: BigQueryWriteClient
    grpc_target: str
    table: bigquery.Table

    @property
    def table_path(self) -> str:
        """The table as the Write API names it."""
        ref = self.table.reference
        return f"projects/{ref.project}/datasets/{ref.dataset_id}/tables/{ref.table_id}"


@pytest.fixture
def stand_in(tmp_path: Path) -> Iterator[StandIn]:
    """Start a corrected BigQuery stand-in with one table of the child's columns."""
    server, endpoints = start_alone(servers.BIGQUERY, PROJECT, tmp_path / "bq.log")
    target = endpoints.bigquery_grpc_target
    bq = bigquery_client(endpoints.project, endpoints.bigquery_url)
    writes = write_client(target)
    try:
        bq.create_dataset(DATASET, exists_ok=True)
        schema = [bigquery.SchemaField.from_api_repr(field.to_api()) for field in FIELDS]
        table = bq.create_table(bigquery.Table(f"{PROJECT}.{DATASET}.events", schema=schema))
        yield StandIn(bq, writes, target, table)
    finally:
        bq.close()  # type: ignore[no-untyped-call]  # the client's close is untyped
        writes.transport.close()
        servers.stop(server)


def _busy_writer(stand_in: StandIn, tmp_path: Path) -> subprocess.Popen[str]:
    """Start the child; return once its connections are answered (or some, after 30 s)."""
    argv = [sys.executable, str(CHILD), stand_in.grpc_target, stand_in.table_path]
    with (tmp_path / "child.log").open("w") as log:
        child = subprocess.Popen(
            [*argv, str(STREAMS), str(ROWS)], stdout=subprocess.PIPE, stderr=log, text=True
        )
    assert child.stdout is not None
    answered: set[str] = set()
    lines: queue.SimpleQueue[str] = queue.SimpleQueue()
    threading.Thread(target=lambda: [lines.put(line) for line in child.stdout], daemon=True).start()
    began = time.monotonic()
    while len(answered) < STREAMS:
        waited = time.monotonic() - began
        if waited > 30 and answered:
            break  # a stand-in that starves connections: the calls below show it
        try:
            answered.add(lines.get(timeout=1.0).split()[1])
        except queue.Empty:
            if waited > 90 or child.poll() is not None:
                child.kill()
                pytest.fail(f"the writer did not get going: {(tmp_path / 'child.log').read_text()}")
    return child


def _write_once(stand_in: StandIn) -> None:
    """Create a PENDING stream, append one row, finalize and commit it (a second writer)."""
    writes = stand_in.writes
    pending = types.WriteStream(type_=types.WriteStream.Type.PENDING)
    stream = writes.create_write_stream(
        parent=stand_in.table_path, write_stream=pending, retry=None, timeout=ANSWER_S
    ).name
    encoder = RowEncoder(FIELDS)
    data = types.AppendRowsRequest.ProtoData(
        writer_schema=types.ProtoSchema(proto_descriptor=encoder.descriptor),
        rows=types.ProtoRows(serialized_rows=[encoder.encode({"event_id": "second", "n": 1})]),
    )
    request = types.AppendRowsRequest(write_stream=stream, proto_rows=data)
    routing = (("x-goog-request-params", f"write_stream={stream}"),)
    [response] = writes.append_rows(iter([request]), timeout=ANSWER_S, metadata=routing)
    assert not response.error.message, response.error.message
    writes.finalize_write_stream(name=stream, retry=None, timeout=ANSWER_S)
    commit = types.BatchCommitWriteStreamsRequest(
        parent=stand_in.table_path, write_streams=[stream]
    )
    committed = writes.batch_commit_write_streams(request=commit, retry=None, timeout=ANSWER_S)
    assert not committed.stream_errors, committed.stream_errors


def _calls(stand_in: StandIn) -> dict[str, Callable[[], object]]:
    bq, table = stand_in.bq, stand_in.table
    return {
        "tables.get": lambda: bq.get_table(table.reference, retry=None, timeout=ANSWER_S),
        "insertAll": lambda: bq.insert_rows_json(
            table, [{"event_id": "rest", "n": 2}], retry=None, timeout=ANSWER_S
        ),
        "query": lambda: list(
            bq.query(
                f"SELECT COUNT(*) FROM `{PROJECT}.{DATASET}.events`",
                retry=RETRY,
                job_retry=None,
                timeout=ANSWER_S,
            ).result(retry=RETRY, timeout=ANSWER_S)
        ),
        "write api": lambda: _write_once(stand_in),
    }


def _unanswered(stand_in: StandIn) -> dict[str, str]:
    """Run each call once; return the ones that failed or took longer than ``ANSWER_S``."""
    slow: dict[str, str] = {}
    for name, call in _calls(stand_in).items():
        began = time.monotonic()
        try:
            call()
        except Exception as exc:  # any failure is the finding
            slow[name] = f"{type(exc).__name__} after {time.monotonic() - began:.1f} s"
            continue
        took = time.monotonic() - began
        if took > ANSWER_S:
            slow[name] = f"answered after {took:.1f} s"
    return slow


@pytest.mark.parametrize(
    "how",
    [
        pytest.param(signal.SIGKILL, id="killed"),
        pytest.param(signal.SIGSTOP, id="frozen"),
    ],
)
def test_other_clients_are_answered_after_a_writer_dies_mid_append(
    how: signal.Signals, stand_in: StandIn, tmp_path: Path
) -> None:
    """A writer killed or frozen mid-append: REST and another writer still answer in seconds."""
    child = _busy_writer(stand_in, tmp_path)
    try:
        os.kill(child.pid, how)
        time.sleep(1.0)  # let the stand-in see the connections reset (or go silent)
        rounds = [_unanswered(stand_in) for _ in range(2)]
    finally:
        child.kill()
        child.wait()
        assert child.stdout is not None
        child.stdout.close()
    expected: list[dict[str, str]] = [{}, {}]
    assert expected == rounds


def _widen(stand_in: StandIn, rounds: int, failures: list[str]) -> None:
    """Add a column ``rounds`` times with tables.patch, as the mutator does."""
    for n in range(rounds):
        try:
            table = stand_in.bq.get_table(stand_in.table.reference, retry=None, timeout=ANSWER_S)
            table.schema = [*table.schema, bigquery.SchemaField(f"added_{n}", "STRING")]
            stand_in.bq.update_table(table, ["schema"], retry=None, timeout=ANSWER_S)
        except Exception as exc:  # any failure is the finding
            failures.append(f"tables.patch: {type(exc).__name__}: {exc}")
            return


def _commit(stand_in: StandIn, rounds: int, failures: list[str]) -> None:
    """Write and commit a PENDING stream ``rounds`` times, as the exactly-once loader does."""
    for _ in range(rounds):
        try:
            _write_once(stand_in)
        except Exception as exc:  # any failure is the finding
            failures.append(f"write api: {type(exc).__name__}: {exc}")
            return


def test_widenings_and_commits_of_one_table_both_go_through(stand_in: StandIn) -> None:
    """tables.patch widenings racing Write API commits on one table: all answered, none stuck."""
    failures: list[str] = []
    workers = [
        threading.Thread(target=_widen, args=(stand_in, 40, failures)),
        threading.Thread(target=_commit, args=(stand_in, 40, failures)),
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    failures.extend(f"{name}: {what}" for name, what in _unanswered(stand_in).items())
    no_failures: list[str] = []
    assert no_failures == failures
