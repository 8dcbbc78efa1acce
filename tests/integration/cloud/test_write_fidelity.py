"""Each Storage Write API correction: the defect shows with it disabled, and is gone with it on.

Every scenario runs against the stack's bqemulator (all corrections) and a second one
started with ``--disable-correction`` for every Write API correction.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator

import pytest
from google.api_core import exceptions as gexc
from google.cloud import bigquery
from google.cloud.bigquery.retry import DEFAULT_RETRY
from google.cloud.bigquery_storage_v1 import BigQueryWriteClient, types
from plowline_cloud.clients import bigquery_client
from plowline_cloud.write_api import write_client
from plowline_cloud.write_api_proto import RowEncoder
from plowline_core.schema.field import Field
from plowline_devstack.bigquery.write_streams import WRITE_API_CONNECTION, WRITE_API_CORRECTIONS
from plowline_devstack.endpoints import Endpoints
from plowline_devstack.stack import servers
from plowline_devstack.stack.alone import start_alone

RETRY = DEFAULT_RETRY.with_deadline(20)
Pair = tuple[bigquery.Client, BigQueryWriteClient]


def _emulator_without(
    names: list[str], cloud_endpoints: Endpoints, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Pair]:
    disabled = [arg for name in names for arg in ("--disable-correction", name)]
    log = tmp_path_factory.mktemp("w") / "bq.log"
    server, endpoints = start_alone(
        servers.BIGQUERY, cloud_endpoints.project, log, extra_args=disabled
    )
    bq = bigquery_client(endpoints.project, endpoints.bigquery_url)
    try:
        bq.create_dataset("snowplow", exists_ok=True, retry=RETRY, timeout=10)
        yield bq, write_client(endpoints.bigquery_grpc_target)
    finally:
        servers.stop(server)


@pytest.fixture(scope="module")
def uncorrected(
    cloud_endpoints: Endpoints, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Pair]:
    """Clients of a bqemulator with the Write API corrections disabled."""
    names = [correction.name for correction in WRITE_API_CORRECTIONS]
    yield from _emulator_without(names, cloud_endpoints, tmp_path_factory)


@pytest.fixture(scope="module")
def shared_connection(
    cloud_endpoints: Endpoints, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Pair]:
    """Clients of a bqemulator without ``write-api-connection`` (the other corrections on)."""
    yield from _emulator_without([WRITE_API_CONNECTION.name], cloud_endpoints, tmp_path_factory)


@pytest.fixture(scope="module")
def corrected(cloud_endpoints: Endpoints) -> Pair:
    """Clients of the stack's corrected bqemulator."""
    return (
        bigquery_client(cloud_endpoints.project, cloud_endpoints.bigquery_url),
        write_client(cloud_endpoints.bigquery_grpc_target),
    )


def _table(bq: bigquery.Client, schema: list[bigquery.SchemaField]) -> bigquery.Table:
    name = f"{bq.project}.snowplow.wf_{uuid.uuid4().hex[:10]}"
    return bq.create_table(bigquery.Table(name, schema=schema), retry=RETRY)


def _path(table: bigquery.Table) -> str:
    return f"projects/{table.project}/datasets/{table.dataset_id}/tables/{table.table_id}"


def _append(
    writes: BigQueryWriteClient,
    stream: str,
    table: bigquery.Table,
    batches: list[list[dict[str, object]]],
) -> list[str]:
    """Append batches on one connection, naming the stream only in the first request."""
    encoder = RowEncoder(tuple(Field.from_api(f.to_api_repr()) for f in table.schema))

    def requests() -> Iterator[types.AppendRowsRequest]:
        for index, batch in enumerate(batches):
            rows = types.ProtoRows(serialized_rows=[encoder.encode(row) for row in batch])
            data = types.AppendRowsRequest.ProtoData(rows=rows)
            if index:
                yield types.AppendRowsRequest(proto_rows=data)
                continue
            data.writer_schema = types.ProtoSchema(proto_descriptor=encoder.descriptor)
            yield types.AppendRowsRequest(write_stream=stream, proto_rows=data)

    try:
        return [
            f"error {r.error.code}" if r.error.code else "ok"
            for r in writes.append_rows(requests(), timeout=20)
        ]
    except gexc.GoogleAPICallError:
        return ["closed"]


def _count(bq: bigquery.Client, table: bigquery.Table) -> int:
    sql = f"SELECT COUNT(*) FROM `{table.project}.{table.dataset_id}.{table.table_id}`"
    return int(next(iter(bq.query(sql, retry=RETRY, job_retry=None).result(retry=RETRY)))[0])


RECORD = [
    bigquery.SchemaField("id", "STRING"),
    bigquery.SchemaField("r", "RECORD", fields=[bigquery.SchemaField("a", "INTEGER")]),
]
FLAT = [bigquery.SchemaField("id", "STRING")]


@pytest.mark.parametrize(
    ("which", "expected"), [("uncorrected", ["closed"]), ("corrected", ["ok"])]
)
def test_write_api_records(which: str, expected: list[str], request: pytest.FixtureRequest) -> None:
    """write-api-records: a row with a RECORD column is appended (shipped: the stream fails)."""
    bq, writes = request.getfixturevalue(which)
    table = _table(bq, RECORD)
    outcome = _append(
        writes, f"{_path(table)}/streams/_default", table, [[{"id": "1", "r": {"a": 1}}]]
    )
    assert expected == outcome


@pytest.mark.parametrize(("which", "expected"), [("uncorrected", 1), ("corrected", 2)])
def test_write_stream_continuation(
    which: str, expected: int, request: pytest.FixtureRequest
) -> None:
    """write-stream-continuation: a second request without write_stream lands on the same stream."""
    bq, writes = request.getfixturevalue(which)
    table = _table(bq, FLAT)
    _append(writes, f"{_path(table)}/streams/_default", table, [[{"id": "1"}], [{"id": "2"}]])
    assert expected == _count(bq, table)


def _pending(writes: BigQueryWriteClient, table: bigquery.Table) -> str:
    created = writes.create_write_stream(
        parent=_path(table), write_stream=types.WriteStream(type_=types.WriteStream.Type.PENDING)
    )
    return str(created.name)


def _commit(writes: BigQueryWriteClient, parent: str, stream: str) -> str:
    try:
        response = writes.batch_commit_write_streams(
            request=types.BatchCommitWriteStreamsRequest(parent=parent, write_streams=[stream])
        )
    except gexc.GoogleAPICallError as exc:
        return type(exc).__name__
    return "errors" if response.stream_errors else "committed"


@pytest.mark.parametrize(("which", "expected"), [("uncorrected", 0), ("corrected", 1)])
def test_write_schema_refresh(which: str, expected: int, request: pytest.FixtureRequest) -> None:
    """write-schema-refresh: PENDING rows committed after a widening land (shipped: they are lost)."""
    bq, writes = request.getfixturevalue(which)
    table = _table(bq, FLAT)
    stream = _pending(writes, table)
    _append(writes, stream, table, [[{"id": "1"}]])
    table.schema = [*table.schema, bigquery.SchemaField("added", "STRING")]
    bq.update_table(table, ["schema"], retry=RETRY)
    writes.finalize_write_stream(name=stream)
    _commit(writes, _path(table), stream)
    assert expected == _count(bq, table)


@pytest.mark.parametrize(
    ("which", "expected"), [("uncorrected", "committed"), ("corrected", "InvalidArgument")]
)
def test_batch_commit_parent(which: str, expected: str, request: pytest.FixtureRequest) -> None:
    """batch-commit-parent: a stream of another table is refused (shipped: it is committed)."""
    bq, writes = request.getfixturevalue(which)
    table, other = _table(bq, FLAT), _table(bq, FLAT)
    stream = _pending(writes, table)
    _append(writes, stream, table, [[{"id": "1"}]])
    writes.finalize_write_stream(name=stream)
    assert expected == _commit(writes, _path(other), stream)


WIDE = [*FLAT, *(bigquery.SchemaField(f"c{n}", "STRING") for n in range(120))]


def _wide_row(row_id: str) -> dict[str, object]:
    return {"id": row_id, **{f"c{n}": f"{row_id}-{'x' * 40}" for n in range(120)}}


def _query_outcomes(bq: bigquery.Client, table: bigquery.Table, done: threading.Event) -> set[str]:
    """Query ``table`` until ``done`` or a first failure; return the distinct outcomes."""
    sql = f"SELECT id FROM `{table.project}.{table.dataset_id}.{table.table_id}`"
    outcomes: set[str] = set()
    while not done.is_set():
        try:
            job = bq.query(sql, retry=RETRY, job_retry=None, timeout=10)
            list(job.result(retry=RETRY, timeout=10))
            outcomes.add("ok")
        except Exception:  # an error reply or a timeout (a stalled emulator): both fail
            outcomes.add("failed")
            break
    return outcomes


@pytest.mark.parametrize(
    ("which", "expected"), [("shared_connection", {"ok", "failed"}), ("corrected", {"ok"})]
)
def test_write_api_connection(
    which: str, expected: set[str], request: pytest.FixtureRequest
) -> None:
    """write-api-connection: queries during appends succeed (shipped: they fail or stall)."""
    bq, writes = request.getfixturevalue(which)
    table = _table(bq, WIDE)
    done = threading.Event()
    batches = [[_wide_row(f"{n}-{i}") for i in range(100)] for n in range(40)]

    def append() -> None:
        _append(writes, f"{_path(table)}/streams/_default", table, batches)

    def append_twice() -> None:  # two connections at once, like Spark's two partitions
        writers = [threading.Thread(target=append) for _ in range(2)]
        for writer in writers:
            writer.start()
        for writer in writers:
            writer.join()
        done.set()

    appender = threading.Thread(target=append_twice)
    appender.start()
    outcomes = _query_outcomes(bq, table, done)
    appender.join(60)
    assert expected == outcomes


NESTED = [
    *FLAT,
    bigquery.SchemaField(
        "reps", "RECORD", mode="REPEATED", fields=[bigquery.SchemaField("a", "INTEGER")]
    ),
]


def _widened(table: bigquery.Table, step: int) -> list[bigquery.SchemaField]:
    """The schema with one more top-level column and one more field inside ``reps``."""
    reps = next(f for f in table.schema if f.name == "reps")
    inner = [f for f in reps.fields if f.name != f"s{step}"]  # a retried patch may have landed
    inner.append(bigquery.SchemaField(f"s{step}", "STRING"))
    others = [f for f in table.schema if f.name not in ("reps", f"c{step}")]
    wider = bigquery.SchemaField("reps", "RECORD", mode="REPEATED", fields=inner)
    return [*others, wider, bigquery.SchemaField(f"c{step}", "STRING")]


def _widen_while_appending(bq: bigquery.Client, writes: BigQueryWriteClient) -> dict[str, object]:
    """Widen a table 12 times while two connections append to it; then read it back."""
    table = first = _table(bq, NESTED)
    done = threading.Event()
    appended: list[str] = []

    def append() -> None:
        batch = [{"id": str(i), "reps": [{"a": i}]} for i in range(50)]
        while not done.is_set():  # one connection per batch: each outcome is one batch's
            appended.extend(_append(writes, f"{_path(first)}/streams/_default", first, [batch]))

    writers = [threading.Thread(target=append) for _ in range(2)]
    for writer in writers:
        writer.start()
    patches: list[str] = []
    for step in range(12):
        time.sleep(0.2)
        for _ in range(50):  # as the mutator does: a stale etag (appends move it) re-reads
            try:
                table = bq.get_table(table, retry=RETRY)
                table.schema = _widened(table, step)
                table = bq.update_table(table, ["schema"], retry=RETRY)
                patches.append("ok")
                break
            except gexc.PreconditionFailed:
                continue
            except gexc.GoogleAPICallError as exc:
                patches.append(f"{type(exc).__name__}: {exc.message}"[:300])
                break
    done.set()
    for writer in writers:
        writer.join(60)
    try:
        counted: object = _count(bq, table)
    except gexc.GoogleAPICallError as exc:
        counted = type(exc).__name__
    return {
        "patches": set(patches),
        "appends": set(appended),
        "rows": counted == 50 * appended.count("ok"),
        "stored": counted,
    }


def test_widening_during_appends_keeps_the_database(corrected: Pair) -> None:
    """Columns added while appends run: every patch lands, every appended row is read back."""
    outcome = _widen_while_appending(*corrected)
    expected = {"patches": {"ok"}, "appends": {"ok"}, "rows": True}
    assert expected == {key: outcome[key] for key in expected}, outcome
