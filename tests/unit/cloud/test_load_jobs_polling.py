"""FILE_LOADS waits on a created load job until it is DONE, whatever jobs.get answers meanwhile."""

from __future__ import annotations

from typing import Any

import pytest
from google.cloud import bigquery
from plowline_cloud.load_jobs import FileLoadSink
from plowline_cloud.testing.google_http import (
    HttpFault,
    ScriptedGoogleHttp,
    bigquery_client,
    storage_client,
)
from plowline_core.errors import PermanentError, TransientError
from plowline_core.ports import Row
from plowline_core.schema.field import Field, FieldType, Mode
from plowline_core.testing.sinks import InMemoryRowSink
from plowline_core.testing.table import InMemoryTableSchemaStore

FIELDS = (Field("event_id", FieldType.STRING, Mode.REQUIRED),)
TABLE = bigquery.TableReference.from_string("p.d.events")
ROWS = [Row(f"e{i}", {"event_id": f"e{i}"}) for i in range(3)]


pytestmark = pytest.mark.usefixtures("instant_retries")  # tests/unit/cloud/conftest.py


def _sink(
    google: ScriptedGoogleHttp, slept: list[float], fallback: InMemoryRowSink
) -> FileLoadSink:
    return FileLoadSink(
        bigquery_client(google),
        storage_client(google),
        "staging",
        TABLE,
        InMemoryTableSchemaStore(FIELDS),
        fallback,
        sleep=slept.append,
    )


def test_a_jobs_get_outage_longer_than_the_clients_retry_is_waited_out() -> None:
    """jobs.get failing for minutes: polled again after bounded sleeps; rows once, object gone."""
    google = ScriptedGoogleHttp()
    google.faults["jobs.get"] = [HttpFault.BACKEND_ERROR] * 40 + [HttpFault.LOST] * 10
    slept: list[float] = []
    fallback = InMemoryRowSink()

    failures = _sink(google, slept, fallback).insert(ROWS)

    expected: tuple[list[Any], dict[str, int], list[str], dict[str, bytes], bool, bool]
    expected = ([], {"e0": 1, "e1": 1, "e2": 1}, [], {}, True, True)
    actual = (
        failures,
        google.count("tables/events"),
        fallback.insert_ids,
        google.objects,
        len(slept) > 0,  # the client's retry budget ran out at least once
        max(slept) <= 10.0,
    )
    assert expected == actual, slept


def test_a_job_whose_jobs_get_is_refused_keeps_its_staged_object() -> None:
    """jobs.get refused (403): insert raises and leaves the object the job may still read."""
    google = ScriptedGoogleHttp()
    google.faults["jobs.get"] = [HttpFault.FORBIDDEN]

    with pytest.raises(PermanentError):
        _sink(google, [], InMemoryRowSink()).insert(ROWS)

    expected = 1
    assert expected == len(google.objects)


def test_a_job_that_could_not_be_created_deletes_its_staged_object() -> None:
    """jobs.insert failing past the client's retry: insert raises, no object left, no row."""
    google = ScriptedGoogleHttp()
    google.faults["jobs.insert"] = [HttpFault.BACKEND_ERROR] * 50

    with pytest.raises(TransientError):
        _sink(google, [], InMemoryRowSink()).insert(ROWS)

    expected: tuple[dict[str, bytes], dict[str, int]] = ({}, {})
    assert expected == (google.objects, google.count("tables/events"))


def test_a_job_that_ends_in_a_transient_error_is_run_once_more() -> None:
    """A job ending in backendError: a second job loads the rows, once; the fallback gets none."""
    google = ScriptedGoogleHttp()
    google.faults["jobs.insert"] = [HttpFault.JOB_BACKEND_ERROR]
    fallback = InMemoryRowSink()

    failures = _sink(google, [], fallback).insert(ROWS)

    expected: tuple[list[Any], dict[str, int], list[str], dict[str, bytes]]
    expected = ([], {"e0": 1, "e1": 1, "e2": 1}, [], {})
    actual = (failures, google.count("tables/events"), fallback.insert_ids, google.objects)
    assert expected == actual
