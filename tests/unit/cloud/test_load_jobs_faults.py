"""FILE_LOADS keeps a load that landed, whatever the staged file's delete or jobs.insert's answer."""

from __future__ import annotations

import pytest
from google.cloud import bigquery
from plowline_cloud.load_jobs import FileLoadSink
from plowline_cloud.row_sink import BigQueryRowSink
from plowline_cloud.testing.google_http import (
    HttpFault,
    ScriptedGoogleHttp,
    bigquery_client,
    storage_client,
)
from plowline_core.ports import Row
from plowline_core.schema.field import Field, FieldType, Mode
from plowline_core.testing.table import InMemoryTableSchemaStore

FIELDS = (Field("event_id", FieldType.STRING, Mode.REQUIRED),)
TABLE = bigquery.TableReference.from_string("p.d.events")
ROWS = [Row(f"e{i}", {"event_id": f"e{i}"}) for i in range(3)]


pytestmark = pytest.mark.usefixtures("instant_retries")  # tests/unit/cloud/conftest.py


def _sink(google: ScriptedGoogleHttp) -> FileLoadSink:
    bq = bigquery_client(google)
    schema = InMemoryTableSchemaStore(FIELDS)
    return FileLoadSink(
        bq, storage_client(google), "staging", TABLE, schema, BigQueryRowSink(bq, TABLE, schema)
    )


@pytest.mark.parametrize(
    "delete",
    [
        pytest.param([HttpFault.FORBIDDEN], id="403-retention-policy"),
        pytest.param([HttpFault.BACKEND_ERROR] * 50, id="gcs-down-for-the-whole-retry"),
    ],
)
def test_a_failing_delete_of_the_staged_file_keeps_the_load(delete: list[HttpFault]) -> None:
    """The load landed and the staged file cannot be deleted: insert returns, rows once."""
    google = ScriptedGoogleHttp()
    google.faults["delete"] = list(delete)

    failures = _sink(google).insert(ROWS)

    assert (failures, google.count("tables/events")) == ([], {"e0": 1, "e1": 1, "e2": 1})


def test_a_lost_jobs_insert_response_is_resolved_by_the_job_id() -> None:
    """jobs.insert applied, its answer lost, the retry answered 409: waited on, rows once."""
    google = ScriptedGoogleHttp()
    google.faults["jobs.insert"] = [HttpFault.LOST_APPLIED]

    failures = _sink(google).insert(ROWS)

    assert (failures, google.count("tables/events")) == ([], {"e0": 1, "e1": 1, "e2": 1})
