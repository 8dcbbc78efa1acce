"""BigQueryTableSchemaStore, BigQueryRowSink and create_events_table against bqemulator."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

import pytest
from google.cloud import bigquery
from google.cloud.bigquery.retry import DEFAULT_RETRY
from plowline_cloud.bigquery import BigQueryRowSink, BigQueryTableSchemaStore, create_events_table
from plowline_cloud.clients import bigquery_client
from plowline_core.errors import PermanentError
from plowline_core.ports import InsertFailure, InsertReason, Row
from plowline_core.schema.field import Field, FieldType, Mode
from plowline_core.testing.clock import FixedClock

BASE = (
    Field("event_id", FieldType.STRING, Mode.REQUIRED),
    Field("collector_tstamp", FieldType.TIMESTAMP, Mode.REQUIRED),
    Field("app_id", FieldType.STRING),
)
NESTED = Field(
    "contexts_com_acme_item_1",
    FieldType.RECORD,
    Mode.REPEATED,
    (
        Field("sku", FieldType.STRING),
        Field("price", FieldType.FLOAT),
        Field("tags", FieldType.STRING, Mode.REPEATED),
        Field("dims", FieldType.RECORD, Mode.NULLABLE, (Field("w", FieldType.INTEGER),)),
    ),
)
UNSTRUCT = Field(
    "unstruct_event_com_acme_click_1",
    FieldType.RECORD,
    Mode.NULLABLE,
    (Field("x", FieldType.INTEGER),),
)


def _clock() -> FixedClock:
    return FixedClock(datetime(2026, 11, 22, tzinfo=UTC))


def _store(
    client: bigquery.Client, table_id: str, clock: FixedClock | None = None
) -> BigQueryTableSchemaStore:
    return BigQueryTableSchemaStore(
        client, table_id, refresh_interval=60.0, clock=clock or _clock(), sleep=lambda _: None
    )


def _row(event_id: str, **extra: Any) -> Row:
    return Row(
        event_id, {"event_id": event_id, "collector_tstamp": "2026-11-22T00:00:00Z", **extra}
    )


def _query(client: bigquery.Client, sql: str) -> list[dict[str, Any]]:
    job = client.query(sql, retry=DEFAULT_RETRY.with_deadline(60), job_retry=None)
    return [dict(row.items()) for row in job.result(timeout=60)]


def _event_ids(client: bigquery.Client, table_id: str) -> list[str]:
    return [
        r["event_id"]
        for r in _query(client, f"SELECT event_id FROM `{table_id}` ORDER BY event_id")
    ]


def test_nested_and_repeated_rows_round_trip(bq: bigquery.Client, table_id: str) -> None:
    """Rows with repeated records, nested records and repeated strings read back as sent."""
    create_events_table(bq, table_id, (*BASE, NESTED, UNSTRUCT))
    items = [
        {"sku": "a", "price": 1.5, "tags": ["x", "y"], "dims": {"w": 3}},
        {"sku": "b", "price": None, "tags": [], "dims": None},
    ]
    sink = BigQueryRowSink(bq, table_id, _store(bq, table_id))
    failures = sink.insert(
        [_row("e1", contexts_com_acme_item_1=items, unstruct_event_com_acme_click_1={"x": 7})]
    )
    rows = _query(
        bq,
        f"SELECT contexts_com_acme_item_1 AS c, unstruct_event_com_acme_click_1 AS u FROM `{table_id}`",
    )
    expected = ([], [{"c": items, "u": {"x": 7}}])
    assert expected == (failures, rows)


def test_unknown_field_is_reported_and_not_inserted(bq: bigquery.Client, table_id: str) -> None:
    """A row naming a missing column fails UNKNOWN_FIELD; the other rows of the batch land."""
    create_events_table(bq, table_id, BASE)
    bad = _row("e2", contexts_com_acme_new_1=[{"a": 1}])
    failures = BigQueryRowSink(bq, table_id, _store(bq, table_id)).insert(
        [_row("e1"), bad, _row("e3")]
    )
    expected = (
        [
            InsertFailure(
                bad,
                InsertReason.UNKNOWN_FIELD,
                "no such field: contexts_com_acme_new_1.",
                "contexts_com_acme_new_1",
            )
        ],
        ["e1", "e3"],
    )
    assert expected == (failures, _event_ids(bq, table_id))


def test_unknown_nested_field_is_reported(bq: bigquery.Client, table_id: str) -> None:
    """A sub-field a RECORD lacks is an unknown field too, named by its dotted path."""
    create_events_table(bq, table_id, (*BASE, UNSTRUCT))
    bad = _row("e1", unstruct_event_com_acme_click_1={"x": 1, "y": 2})
    [failure] = BigQueryRowSink(bq, table_id, _store(bq, table_id)).insert([bad])
    expected = (InsertReason.UNKNOWN_FIELD, "no such field: unstruct_event_com_acme_click_1.y.")
    assert expected == (failure.reason, failure.message)


def test_row_fits_after_another_process_added_the_column(
    bq: bigquery.Client, table_id: str
) -> None:
    """A stale cached schema is refreshed on a miss, so a row for a just-added column lands."""
    create_events_table(bq, table_id, BASE)
    sink = BigQueryRowSink(bq, table_id, _store(bq, table_id))
    sink.insert([_row("e0")])
    _store(bigquery_client(bq.project, _endpoint(bq)), table_id).add_fields([UNSTRUCT])
    failures = sink.insert([_row("e1", unstruct_event_com_acme_click_1={"x": 5})])
    rows = _query(
        bq, f"SELECT unstruct_event_com_acme_click_1.x AS x FROM `{table_id}` WHERE event_id = 'e1'"
    )
    expected = ([], [{"x": 5}])
    assert expected == (failures, rows)


def test_too_large_row_is_refused_alone(bq: bigquery.Client, table_id: str) -> None:
    """A row over the request size limit fails TOO_LARGE and the rest are inserted."""
    create_events_table(bq, table_id, BASE)
    big = _row("e2", app_id="x" * 2000)
    sink = BigQueryRowSink(bq, table_id, _store(bq, table_id), max_bytes=1000)
    failures = sink.insert([_row("e1"), big])
    expected = ([(big, InsertReason.TOO_LARGE)], ["e1"])
    assert expected == ([(f.row, f.reason) for f in failures], _event_ids(bq, table_id))


def test_more_rows_than_one_request(bq: bigquery.Client, table_id: str) -> None:
    """1,200 rows go in several requests of at most 500 and all land."""
    create_events_table(bq, table_id, BASE)
    rows = [_row(f"e{i:04d}") for i in range(1200)]
    failures = BigQueryRowSink(bq, table_id, _store(bq, table_id)).insert(rows)
    expected = ([], 1200)
    assert expected == (failures, _query(bq, f"SELECT COUNT(*) AS n FROM `{table_id}`")[0]["n"])


def test_invalid_row_fails_and_stopped_rows_land(bq: bigquery.Client, table_id: str) -> None:
    """A row BigQuery refuses is INVALID; the rows it stopped are sent again and land."""
    create_events_table(bq, table_id, BASE)
    bad = Row("e2", {"event_id": "e2", "collector_tstamp": "not a time"})
    failures = BigQueryRowSink(bq, table_id, _store(bq, table_id)).insert(
        [_row("e1"), bad, _row("e3")]
    )
    expected = ([(bad, InsertReason.INVALID)], ["e1", "e3"])
    assert expected == ([(f.row, f.reason) for f in failures], _event_ids(bq, table_id))


def test_rows_encoded_one_by_one_land_as_the_whole_request_does(
    bq: bigquery.Client, table_id: str
) -> None:
    """A read-only mapping among dict rows sends the call row by row: every row lands."""
    create_events_table(bq, table_id, BASE)
    odd = Row("e2", MappingProxyType(dict(_row("e2", app_id="é").data)))
    rows = [_row("e1", app_id="a"), odd, _row("e3", app_id="🎉")]
    failures = BigQueryRowSink(bq, table_id, _store(bq, table_id)).insert(rows)
    landed = _query(bq, f"SELECT event_id, app_id FROM `{table_id}` ORDER BY event_id")
    expected = ([], [("e1", "a"), ("e2", "é"), ("e3", "🎉")])
    assert expected == (failures, [(r["event_id"], r["app_id"]) for r in landed])


def _endpoint(client: bigquery.Client) -> str:
    return str(client._connection.API_BASE_URL)


def test_add_fields_widens_the_table(bq: bigquery.Client, table_id: str) -> None:
    """add_fields adds new columns and returns them; the table has them afterwards."""
    create_events_table(bq, table_id, BASE)
    added = _store(bq, table_id).add_fields([UNSTRUCT, BASE[2]])
    expected = ((UNSTRUCT,), [*BASE, UNSTRUCT])
    assert expected == (added, list(_store(bq, table_id).refresh()))


def test_add_nested_field(bq: bigquery.Client, table_id: str) -> None:
    """add_fields adds a missing sub-field to an existing RECORD."""
    create_events_table(bq, table_id, (*BASE, UNSTRUCT))
    wider = Field(
        UNSTRUCT.name,
        FieldType.RECORD,
        Mode.NULLABLE,
        (*UNSTRUCT.fields, Field("y", FieldType.STRING)),
    )
    _store(bq, table_id).add_fields([wider])
    assert wider == _store(bq, table_id).refresh()[-1]


def test_fields_are_cached_until_the_interval(bq: bigquery.Client, table_id: str) -> None:
    """fields() serves the cache until refresh_interval passed on the clock, then re-reads."""
    create_events_table(bq, table_id, BASE)
    clock = _clock()
    reader = _store(bq, table_id, clock)
    reader.fields()
    _store(bq, table_id).add_fields([UNSTRUCT])
    before = len(reader.fields())
    clock.advance(60)
    expected = (3, 4)
    assert expected == (before, len(reader.fields()))


def test_concurrent_schema_patches_both_land(bq: bigquery.Client, table_id: str) -> None:
    """Two stores on separate clients adding different columns at once both succeed."""
    create_events_table(bq, table_id, BASE)
    stores = [_store(bigquery_client(bq.project, _endpoint(bq)), table_id) for _ in range(2)]
    columns = [Field("col_a", FieldType.STRING), Field("col_b", FieldType.INTEGER)]
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def add(store: BigQueryTableSchemaStore, column: Field) -> None:
        barrier.wait(timeout=30)
        try:
            store.add_fields([column])
        except BaseException as exc:  # collected: the assertion below reports it
            errors.append(exc)

    threads = [
        threading.Thread(target=add, args=pair) for pair in zip(stores, columns, strict=True)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    names = {field.name for field in _store(bq, table_id).refresh()}
    expected = ([], True)
    assert expected == (errors, {"col_a", "col_b"} <= names)


def test_create_events_table_is_idempotent(bq: bigquery.Client, table_id: str) -> None:
    """Creating the same table twice creates it once and accepts it the second time."""
    first = create_events_table(
        bq, table_id, BASE, partition_column="collector_tstamp", cluster_by=["app_id"]
    )
    second = create_events_table(
        bq, table_id, BASE, partition_column="collector_tstamp", cluster_by=["app_id"]
    )
    expected = (True, False)
    assert expected == (first, second)


def test_create_events_table_accepts_wider_table(bq: bigquery.Client, table_id: str) -> None:
    """An existing table with extra columns (added by the mutator) is compatible."""
    create_events_table(bq, table_id, (*BASE, UNSTRUCT))
    assert create_events_table(bq, table_id, BASE) is False


def test_create_events_table_refuses_incompatible(bq: bigquery.Client, table_id: str) -> None:
    """An existing table whose column has another type is a PermanentError naming it."""
    create_events_table(bq, table_id, BASE)
    clash = (BASE[0], BASE[1], Field("app_id", FieldType.INTEGER))
    with pytest.raises(
        PermanentError, match="app_id is STRING NULLABLE, expected INTEGER NULLABLE"
    ):
        create_events_table(bq, table_id, clash)
