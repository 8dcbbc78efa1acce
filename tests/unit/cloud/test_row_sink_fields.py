"""insertAll's field check: a row naming a field the table lacks is refused, never sent.

The official BigQuery client runs unchanged over ``ScriptedGoogleHttp`` (a model of the
table); the schema is an ``InMemoryTableSchemaStore`` whose backend another process widens.
"""

from __future__ import annotations

import pytest
from plowline_cloud.row_sink import BigQueryRowSink
from plowline_cloud.testing.google_http import ScriptedGoogleHttp, bigquery_client
from plowline_core.ports import InsertFailure, InsertReason, Row
from plowline_core.schema.field import Field, FieldType, Mode
from plowline_core.testing.table import InMemoryTableSchemaStore

pytestmark = pytest.mark.unit

FIELDS = (
    Field("event_id", FieldType.STRING, Mode.REQUIRED),
    Field(
        "contexts_x_1",
        FieldType.RECORD,
        Mode.REPEATED,
        (Field("a", FieldType.INTEGER, Mode.NULLABLE),),
    ),
)


def _sink() -> tuple[BigQueryRowSink, InMemoryTableSchemaStore, ScriptedGoogleHttp]:
    google = ScriptedGoogleHttp()
    store = InMemoryTableSchemaStore(FIELDS)
    return BigQueryRowSink(bigquery_client(google), "p.d.events", store), store, google


def test_only_the_rows_naming_unknown_fields_are_refused() -> None:
    """Among known rows, each row with an unknown column or sub-field fails with its path."""
    sink, _, google = _sink()
    rows = [
        Row("e0", {"event_id": "e0"}),
        Row("e1", {"event_id": "e1", "zz": 1}),
        Row("e2", {"event_id": "e2", "contexts_x_1": [{"a": 1}]}),
        Row("e3", {"event_id": "e3", "contexts_x_1": [{"a": 1, "b": 2}]}),
    ]

    failures = sink.insert(rows)

    expected = [
        InsertFailure(rows[1], InsertReason.UNKNOWN_FIELD, "no such field: zz.", "zz"),
        InsertFailure(
            rows[3],
            InsertReason.UNKNOWN_FIELD,
            "no such field: contexts_x_1.b.",
            "contexts_x_1.b",
        ),
    ]
    assert (expected, {"e0": 1, "e2": 1}) == (failures, google.count())


def test_a_column_added_meanwhile_is_taken_and_others_still_refused() -> None:
    """After the table gains ``zz`` (schema refreshed), ``zz`` is taken, ``qq`` still refused."""
    sink, store, google = _sink()
    assert sink.insert([Row("e0", {"event_id": "e0", "zz": 1})])  # refused: no zz yet
    store.widen_backend([Field("zz", FieldType.INTEGER, Mode.NULLABLE)])
    late = Row("e2", {"event_id": "e2", "qq": 1})

    failures = sink.insert([Row("e1", {"event_id": "e1", "zz": 1}), late])

    expected = [InsertFailure(late, InsertReason.UNKNOWN_FIELD, "no such field: qq.", "qq")]
    assert (expected, {"e1": 1}) == (failures, google.count())
