"""Exactly-once recovery ends, whatever BigQuery says of a ledgered stream that cannot commit."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from google.cloud import bigquery
from plowline_cloud.partition_filter import Partitioning, partition_filter
from plowline_cloud.testing.google_http import ScriptedGoogleHttp, bigquery_client
from plowline_cloud.testing.google_write import CommitFault, ScriptedWriteClient
from plowline_cloud.write_api_pending import ExactlyOnceSink
from plowline_core.errors import TransientError
from plowline_core.ports import Row
from plowline_core.schema.field import Field, FieldType, Mode
from plowline_core.testing.table import InMemoryTableSchemaStore

FIELDS = (
    Field("event_id", FieldType.STRING, Mode.REQUIRED),
    Field("collector_tstamp", FieldType.TIMESTAMP),
)
TABLE = bigquery.TableReference.from_string("p.d.events")
STAMP = "2026-11-01T10:00:00+00:00"
ROWS = [Row(f"e{i}", {"event_id": f"e{i}", "collector_tstamp": STAMP}) for i in range(3)]


def _sink(google: ScriptedWriteClient, partition_column: str | None = None) -> ExactlyOnceSink:
    http = ScriptedGoogleHttp(
        tables=lambda: google.tables, require_partition_filter=partition_column
    )
    return ExactlyOnceSink(
        google,  # type: ignore[arg-type]  # Google's side, scripted
        bigquery_client(http),
        TABLE,
        "p.d.events_ledger",
        InMemoryTableSchemaStore(FIELDS),
        sleep=lambda _: None,
    )


def _ledgered_but_not_committed(sink: ExactlyOnceSink, google: ScriptedWriteClient) -> None:
    google.commits = [CommitFault.OK, CommitFault.UNAVAILABLE]  # the ledger, then the events
    with pytest.raises(TransientError):
        sink.insert(ROWS)


@pytest.mark.parametrize(
    "spoiled",
    [
        pytest.param(CommitFault.EXPIRED, id="garbage-collected"),
        pytest.param(CommitFault.INVALID_STREAM_STATE, id="INVALID_STREAM_STATE"),
        pytest.param(CommitFault.SCHEMA_MISMATCH, id="column-dropped"),
    ],
)
def test_a_stream_that_can_never_commit_is_written_again(spoiled: CommitFault) -> None:
    """The ledgered stream cannot commit any more: the redelivery lands the rows once."""
    google = ScriptedWriteClient()
    sink = _sink(google)
    _ledgered_but_not_committed(sink, google)
    google.spoil_pending(spoiled)

    failures = sink.insert(ROWS)

    assert (failures, google.committed("tables/events")) == ([], {"e0": 1, "e1": 1, "e2": 1})


def test_the_table_lookup_carries_a_partition_filter_when_the_table_requires_one() -> None:
    """On a --requirePartitionFilter table the ids lookup is accepted: rows land once."""
    google = ScriptedWriteClient()
    sink = _sink(google, partition_column="collector_tstamp")
    _ledgered_but_not_committed(sink, google)
    google.spoil_pending(CommitFault.EXPIRED)

    failures = sink.insert(ROWS)

    assert (failures, google.committed("tables/events")) == ([], {"e0": 1, "e1": 1, "e2": 1})


def test_the_partition_range_covers_a_row_older_than_the_lookback() -> None:
    """A row whose event time is a month old is inside the filter's range."""
    spec = Partitioning("collector_tstamp", "TIMESTAMP", required=True)
    now = datetime(2026, 12, 1, tzinfo=UTC)

    clause, params = partition_filter(spec, [{"collector_tstamp": STAMP}], now, lookback_days=8)

    low, high = (param.value for param in params)
    assert (clause, low <= datetime.fromisoformat(STAMP) <= high) == (
        "`collector_tstamp` BETWEEN @part_lo AND @part_hi",
        True,
    )
