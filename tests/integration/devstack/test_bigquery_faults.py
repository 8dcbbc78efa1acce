"""Each BigQuery fault of the catalogue, seen through the official google-cloud-bigquery clients.

Every scenario starts its own ``python -m plowline_devstack.bigquery --faults FILE`` with
one fault on (rate 1 unless the test is about a rate), as ``plowline dev up --faults``
does, and talks to it over REST (google-cloud-bigquery) or gRPC (the Storage Write API
GAPIC client).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from google.api_core import exceptions as gexc
from google.cloud import bigquery
from google.cloud.bigquery.retry import DEFAULT_RETRY
from google.cloud.bigquery_storage_v1 import BigQueryWriteClient, types
from plowline_cloud.clients import bigquery_client
from plowline_cloud.clock import SystemClock
from plowline_cloud.table_schema import BigQueryTableSchemaStore
from plowline_cloud.write_api import write_client
from plowline_cloud.write_api_committed import WriteApiRowSink
from plowline_cloud.write_api_pending import ExactlyOnceSink, ensure_ledger
from plowline_cloud.write_api_proto import RowEncoder
from plowline_core.errors import TransientError
from plowline_core.ports import Row
from plowline_core.schema.field import Field
from plowline_devstack.stack import servers
from plowline_devstack.stack.alone import start_alone

PROJECT = "plowline-faults"
DATASET = "snowplow"
SCHEMA = [bigquery.SchemaField("id", "STRING")]
EVENT_SCHEMA = [bigquery.SchemaField("event_id", "STRING", mode="REQUIRED")]
Start = Callable[..., "Faulty"]


class Faulty:
    """A bqemulator started with one fault plan, and its REST and Write API clients."""

    def __init__(self, bq: bigquery.Client, writes: BigQueryWriteClient) -> None:
        self.bq = bq
        self.writes = writes

    def table(self, schema: list[bigquery.SchemaField] = SCHEMA) -> bigquery.Table:
        """Create a table (tables.insert is never faulted)."""
        name = f"{PROJECT}.{DATASET}.f_{uuid.uuid4().hex[:10]}"
        return self.bq.create_table(bigquery.Table(name, schema=schema), retry=None)  # type: ignore[arg-type]  # no retry: never faulted

    def ids(self, table: bigquery.Table) -> list[str]:
        """Return the ``id`` column of every row (tabledata.list is never faulted)."""
        return sorted(row["id"] for row in self.bq.list_rows(table, retry=None))  # type: ignore[arg-type]  # as above


@pytest.fixture
def faulty(tmp_path: Path) -> Iterator[Start]:
    """``faulty(faults, seed=0)``: a bqemulator with those ``[bigquery]`` faults on."""
    started: list[tuple[servers.ServerProcess, Faulty]] = []

    def start(faults: dict[str, Any], seed: int = 0) -> Faulty:
        plan = tmp_path / f"faults-{len(started)}.json"
        plan.write_text(json.dumps({"seed": seed, "bigquery": faults}))
        log = tmp_path / f"bq-{len(started)}.log"
        server, endpoints = start_alone(
            servers.BIGQUERY, PROJECT, log, extra_args=["--faults", str(plan)]
        )
        bq = bigquery_client(endpoints.project, endpoints.bigquery_url)
        started.append((server, Faulty(bq, write_client(endpoints.bigquery_grpc_target))))
        bq.create_dataset(DATASET, exists_ok=True, retry=None, timeout=10)  # type: ignore[arg-type]  # never faulted
        return started[-1][1]

    yield start
    for server, clients in started:
        clients.bq.close()
        clients.writes.transport.close()
        servers.stop(server)


def _reason(exc: gexc.GoogleAPICallError) -> tuple[int | None, str]:
    return exc.code, str(exc.errors[0]["reason"])


def test_backend_error_refuses_an_insert_without_applying_it(faulty: Start) -> None:
    """backend-error: insertAll is answered 500/503 backendError and no row is stored."""
    bq = faulty({"backend-error": {"rate": 1.0}})
    table = bq.table()
    with pytest.raises((gexc.InternalServerError, gexc.ServiceUnavailable)) as caught:
        bq.bq.insert_rows_json(table, [{"id": "a"}], retry=None)  # type: ignore[arg-type]  # see the raw answer
    expected = ("backendError", [])
    assert expected == (_reason(caught.value)[1], bq.ids(table))


def test_the_default_retry_gets_an_insert_through_backend_errors(faulty: Start) -> None:
    """backend-error at 50%: the client's default retry stores every row, once."""
    bq = faulty({"backend-error": {"rate": 0.5}}, seed=3)
    table = bq.table()
    retry = DEFAULT_RETRY.with_deadline(30).with_delay(initial=0.05, maximum=0.2)
    errors = [
        bq.bq.insert_rows_json(table, [{"id": f"r{n}"}], row_ids=[f"r{n}"], retry=retry)
        for n in range(8)
    ]
    expected = ([[]] * 8, [f"r{n}" for n in range(8)])
    assert expected == (errors, bq.ids(table))


def test_rate_limit_exceeded_answers_403_and_429_that_the_client_retries(faulty: Start) -> None:
    """rate-limit-exceeded: tables.get gets 403 or 429 rateLimitExceeded, which DEFAULT_RETRY retries."""
    bq = faulty({"rate-limit-exceeded": {"rate": 1.0}}, seed=1)
    table = bq.table()
    answers: set[tuple[int | None, str]] = set()
    retried: set[bool] = set()
    for _ in range(12):
        with pytest.raises((gexc.Forbidden, gexc.TooManyRequests)) as caught:
            bq.bq.get_table(table.reference, retry=None)  # type: ignore[arg-type]  # see the raw answer
        answers.add(_reason(caught.value))
        retried.add(bool(DEFAULT_RETRY._predicate(caught.value)))
    expected = ({(403, "rateLimitExceeded"), (429, "rateLimitExceeded")}, {True})
    assert expected == (answers, retried)


def test_timeout_hangs_past_the_clients_timeout(faulty: Start) -> None:
    """timeout: tables.get hangs; the client's 1 s timeout fires, then the call is answered 503."""
    bq = faulty({"timeout": {"rate": 1.0, "seconds": 3}})
    table = bq.table()
    started = time.monotonic()
    with pytest.raises(requests.exceptions.Timeout):
        bq.bq.get_table(table.reference, retry=None, timeout=1)  # type: ignore[arg-type]  # one try
    timed_out = time.monotonic() - started
    with pytest.raises(gexc.ServiceUnavailable):
        bq.bq.get_table(table.reference, retry=None, timeout=10)  # type: ignore[arg-type]  # as above
    waited = time.monotonic() - started - timed_out
    expected = (True, True)
    assert expected == (timed_out < 2.5, 2.5 < waited < 6), (timed_out, waited)


def test_a_lost_insert_response_hides_an_applied_insert(faulty: Start) -> None:
    """response-lost-after-write: insertAll answers 503 but stored the row; a retry is de-duplicated."""
    bq = faulty({"response-lost-after-write": {"rate": 1.0}})
    table = bq.table()
    for _ in range(2):  # the retry a client makes after the 503, same insertId
        with pytest.raises(gexc.ServiceUnavailable):
            bq.bq.insert_rows_json(table, [{"id": "once"}], row_ids=["i-1"], retry=None)  # type: ignore[arg-type]  # one try each
    expected = ["once"]
    assert expected == bq.ids(table)


def test_a_lost_patch_response_hides_an_applied_schema_change(faulty: Start) -> None:
    """response-lost-after-write: tables.patch answers 503 but the column was added."""
    bq = faulty({"response-lost-after-write": {"rate": 1.0}})
    table = bq.table()
    table.schema = [*SCHEMA, bigquery.SchemaField("added", "STRING")]
    with pytest.raises(gexc.ServiceUnavailable):
        bq.bq.update_table(table, ["schema"], retry=None)  # type: ignore[arg-type]  # one try
    expected = ["id", "added"]
    assert expected == [f.name for f in bq.bq.get_table(table.reference, retry=None).schema]  # type: ignore[arg-type]  # get is not a write


def test_a_lost_jobs_insert_response_hides_a_created_job(faulty: Start) -> None:
    """response-lost-after-write: jobs.insert answers 503, yet the job exists under its id."""
    bq = faulty({"response-lost-after-write": {"rate": 1.0}})
    job_id = f"j_{uuid.uuid4().hex}"
    with pytest.raises(gexc.ServiceUnavailable):
        bq.bq.query("SELECT 1 AS x", job_id=job_id, retry=None, job_retry=None)  # type: ignore[arg-type]  # one try
    expected = job_id
    assert expected == bq.bq.get_job(job_id, retry=None).job_id  # type: ignore[arg-type]  # get is not a write


def test_without_faults_a_write_answers_normally(faulty: Start) -> None:
    """A plan naming a fault at rate 0 changes nothing: insertAll answers and stores."""
    bq = faulty({"response-lost-after-write": {"rate": 0.0}, "backend-error": {}})
    table = bq.table()
    errors = bq.bq.insert_rows_json(table, [{"id": "a"}], retry=None)  # type: ignore[arg-type]  # one try
    expected: tuple[list[Any], list[str]] = ([], ["a"])
    assert expected == (errors, bq.ids(table))


def _path(table: bigquery.Table) -> str:
    return f"projects/{table.project}/datasets/{table.dataset_id}/tables/{table.table_id}"


def _append(bq: Faulty, table: bigquery.Table, rows: list[dict[str, object]]) -> str:
    """Append ``rows`` to the table's _default stream on one connection; return the outcome."""
    encoder = RowEncoder(tuple(Field.from_api(f.to_api_repr()) for f in table.schema))
    data = types.AppendRowsRequest.ProtoData(
        rows=types.ProtoRows(serialized_rows=[encoder.encode(row) for row in rows]),
        writer_schema=types.ProtoSchema(proto_descriptor=encoder.descriptor),
    )
    request = types.AppendRowsRequest(
        write_stream=f"{_path(table)}/streams/_default", proto_rows=data
    )
    try:
        responses = list(bq.writes.append_rows(iter([request]), retry=None, timeout=20))
    except gexc.GoogleAPICallError as exc:
        return type(exc).__name__
    return " ".join(
        f"error {r.error.code}: {r.error.message}" if r.error.code else "ok" for r in responses
    )


def test_a_broken_append_stream_hides_an_applied_append(faulty: Start) -> None:
    """append-stream-broken-after-apply: the stream fails UNAVAILABLE; a blind re-send stores the rows twice."""
    bq = faulty({"append-stream-broken-after-apply": {"rate": 1.0}})
    table = bq.table()
    outcomes = [_append(bq, table, [{"id": "x"}]) for _ in range(2)]  # the second: a blind retry
    expected = (["ServiceUnavailable", "ServiceUnavailable"], ["x", "x"])
    assert expected == (outcomes, bq.ids(table))


def test_new_columns_reach_the_write_api_only_after_the_delay(faulty: Start) -> None:
    """schema-propagation-delay: after a widening, appends naming the new column are refused for N s."""
    bq = faulty({"schema-propagation-delay": {"seconds": 3}})
    warm = bq.table()
    _append(bq, warm, [{"id": "warm"}])  # the server's first append imports for seconds
    table = bq.table()
    table.schema = [*SCHEMA, bigquery.SchemaField("added", "STRING")]
    table = bq.bq.update_table(table, ["schema"], retry=None)  # type: ignore[arg-type]  # one try
    refused = _append(bq, table, [{"id": "early", "added": "v"}])
    old_shape = _append(bq, table.__class__(table.reference, schema=SCHEMA), [{"id": "old"}])
    time.sleep(3.2)
    later = _append(bq, table, [{"id": "late", "added": "v"}])
    expected = (
        "error 3: Input schema has more fields than BigQuery schema, extra fields: 'added'",
        "ok",
        "ok",
        ["late", "old"],
    )
    assert expected == (refused, old_shape, later, bq.ids(table))


def test_a_write_api_append_is_applied_at_once_without_the_delay(faulty: Start) -> None:
    """Without schema-propagation-delay an append naming a just-added column is stored."""
    bq = faulty({"backend-error": {"rate": 0.0}})
    table = bq.table()
    table.schema = [*SCHEMA, bigquery.SchemaField("added", "STRING")]
    table = bq.bq.update_table(table, ["schema"], retry=None)  # type: ignore[arg-type]  # one try
    expected = ("ok", ["early"])
    assert expected == (_append(bq, table, [{"id": "early", "added": "v"}]), bq.ids(table))


def _rows(*ids: str) -> list[Row]:
    return [Row(event_id, {"event_id": event_id}) for event_id in ids]


def _event_ids(bq: Faulty, table: bigquery.Table) -> list[str]:
    return sorted(row["event_id"] for row in bq.bq.list_rows(table, retry=None))  # type: ignore[arg-type]  # never faulted


def test_a_row_refused_beside_an_internal_error_is_reported_by_the_sink(faulty: Start) -> None:
    """append-row-errors-then-internal: every row lands or is reported, never neither."""
    bq = faulty({"append-row-errors-then-internal": {"rate": 1.0}})
    table = bq.table(EVENT_SCHEMA)
    store = BigQueryTableSchemaStore(bq.bq, table.reference, 60.0, SystemClock())
    sink = WriteApiRowSink(bq.writes, table.reference, store, sleep=lambda _: None)
    rows = _rows("a", "b", "c")

    failed = [failure.row.insert_id for failure in sink.insert(rows)]

    landed = _event_ids(bq, table)
    expected = (sorted(row.insert_id for row in rows), set())
    assert expected == (sorted(failed + landed), set(failed) & set(landed)), (failed, landed)


def test_a_stream_that_can_never_commit_is_written_again_by_exactly_once(faulty: Start) -> None:
    """commit-invalid-stream-state: the redelivery lands every row once."""
    bq = faulty({"commit-invalid-stream-state": {"rate": 1.0, "after": 1, "times": 1}})
    table = bq.table(EVENT_SCHEMA)
    ledger = f"{table.project}.{table.dataset_id}.{table.table_id}_ledger"
    ensure_ledger(bq.bq, ledger)
    store = BigQueryTableSchemaStore(bq.bq, table.reference, 60.0, SystemClock())
    sink = ExactlyOnceSink(bq.writes, bq.bq, table.reference, ledger, store, sleep=lambda _: None)
    rows = _rows("a", "b", "c")
    with pytest.raises(TransientError):
        sink.insert(rows)  # the ledger commits, the events stream is refused for ever

    failures = sink.insert(rows)  # the redelivery

    assert (failures, _event_ids(bq, table)) == ([], ["a", "b", "c"])
