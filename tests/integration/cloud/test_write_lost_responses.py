"""Exactly-once when an append's response is lost after BigQuery applied it (local bqemulator).

The fault sits on the client's gRPC channel: the first AppendRows call goes through, the
emulator applies every request, and the client is told ``DEADLINE_EXCEEDED`` instead of
the responses, as when a connection drops after the append and before the reply.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import grpc
import pytest
from google.cloud import bigquery
from google.cloud.bigquery.retry import DEFAULT_RETRY
from google.cloud.bigquery_storage_v1 import BigQueryWriteClient
from google.cloud.bigquery_storage_v1.services.big_query_write.transports.grpc import (
    BigQueryWriteGrpcTransport,
)
from plowline_cloud.table_schema import BigQueryTableSchemaStore
from plowline_cloud.write_api_pending import ExactlyOnceSink, ensure_ledger
from plowline_core.errors import TransientError
from plowline_core.ports import Row
from plowline_core.testing.clock import FixedClock
from plowline_devstack.endpoints import Endpoints

RETRY = DEFAULT_RETRY.with_deadline(30)
SCHEMA = [
    bigquery.SchemaField("event_id", "STRING", mode="REQUIRED"),
    bigquery.SchemaField("n", "INTEGER"),
]
_APPEND_ROWS = "/google.cloud.bigquery.storage.v1.BigQueryWrite/AppendRows"


class LostResponse(grpc.RpcError):
    """The status a client sees when the reply never came: DEADLINE_EXCEEDED."""

    def code(self) -> grpc.StatusCode:
        """Return the status code."""
        return grpc.StatusCode.DEADLINE_EXCEEDED

    def details(self) -> str:
        """Return the status message."""
        return "Deadline Exceeded (the append was applied; its response was lost)"

    def trailing_metadata(self) -> None:
        """Return no trailers (no rich status)."""
        return


class LoseAppendResponses(grpc.StreamStreamClientInterceptor):  # type: ignore[misc]  # untyped
    """Let the first ``times`` AppendRows calls reach the server, then drop their responses."""

    def __init__(self, times: int) -> None:
        self.left = times
        self.lost = 0  # responses the client never saw

    def intercept_stream_stream(
        self, continuation: Callable[..., Any], details: Any, requests: Iterator[Any]
    ) -> Any:
        """Drain the real call (every append applied), then fail instead of answering."""
        call = continuation(details, requests)
        if details.method != _APPEND_ROWS or self.left == 0:
            return call
        self.left -= 1
        self.lost += sum(1 for _ in call)
        return _failing()


def _failing() -> Iterator[Any]:
    raise LostResponse()
    yield  # a generator: the error comes on the first next(), as from a real stream


def _client(target: str, interceptor: LoseAppendResponses) -> BigQueryWriteClient:
    channel = grpc.intercept_channel(grpc.insecure_channel(target), interceptor)
    return BigQueryWriteClient(transport=BigQueryWriteGrpcTransport(channel=channel))  # type: ignore[no-untyped-call]


@pytest.fixture
def table(bq: bigquery.Client, table_id: str) -> Iterator[bigquery.TableReference]:
    """A fresh table and its ledger."""
    bq.create_table(bigquery.Table(table_id, schema=SCHEMA), retry=RETRY)
    ensure_ledger(bq, f"{table_id}_ledger")
    yield bigquery.TableReference.from_string(table_id)
    bq.delete_table(f"{table_id}_ledger", not_found_ok=True)


def _sink(
    bq: bigquery.Client, client: BigQueryWriteClient, table: bigquery.TableReference, **kw: Any
) -> ExactlyOnceSink:
    store = BigQueryTableSchemaStore(
        bq, table, 3600.0, FixedClock(datetime(2024, 1, 1, tzinfo=UTC))
    )
    ledger = f"{table.project}.{table.dataset_id}.{table.table_id}_ledger"
    return ExactlyOnceSink(client, bq, table, ledger, store, sleep=lambda _: None, **kw)


def _counts(bq: bigquery.Client, table: bigquery.TableReference) -> tuple[int, int]:
    sql = (
        "SELECT COUNT(*), COUNT(DISTINCT event_id) "
        f"FROM `{table.project}.{table.dataset_id}.{table.table_id}`"
    )
    [row] = list(bq.query(sql, retry=RETRY, job_retry=None).result(retry=RETRY, timeout=60))
    return int(row[0]), int(row[1])


def _rows(count: int) -> list[Row]:
    return [Row(f"e{i:05d}", {"event_id": f"e{i:05d}", "n": i}) for i in range(count)]


def test_an_applied_append_whose_response_was_lost_lands_once(
    bq: bigquery.Client, cloud_endpoints: Endpoints, table: bigquery.TableReference
) -> None:
    """The first append's reply lost after it was applied: 300 rows committed once, not twice."""
    lose = LoseAppendResponses(times=1)
    sink = _sink(bq, _client(cloud_endpoints.bigquery_grpc_target, lose), table)

    failures = sink.insert(_rows(300))

    assert (failures, lose.lost, _counts(bq, table)) == ([], 1, (300, 300))


def test_appends_unanswered_on_every_stream_raise_and_commit_nothing(
    bq: bigquery.Client, cloud_endpoints: Endpoints, table: bigquery.TableReference
) -> None:
    """Every stream's reply lost: a TransientError, and no row visible (nothing committed)."""
    lose = LoseAppendResponses(times=3)
    sink = _sink(bq, _client(cloud_endpoints.bigquery_grpc_target, lose), table, fresh_streams=3)

    with pytest.raises(TransientError, match="3 PENDING streams in a row"):
        sink.insert(_rows(20))

    assert (lose.lost, _counts(bq, table)) == (3, (0, 0))
