"""insertAll and load-job sinks held to the delivery contract under arbitrary HTTP answers.

The official BigQuery and Cloud Storage clients run unchanged; their session's transport
is ``ScriptedGoogleHttp``, a model of BigQuery's tables and the staging bucket whose every
call takes a drawn fault (500, a connection reset before or after the call is applied, a
403 on delete, a load job ending in backendError). The clients' retry and job polling
sleep on a fake clock. A hypothesis state machine delivers batches (some rows bad) and
redelivers every batch whose call raised; after each call that returns, each row given is
in the table or in the failures, never both, never neither (insertAll: at least once; load
jobs: exactly once, since no drawn run of faults outlasts the clients' retry budget, and a
call that raises loaded none of its rows). At the end every raised row is redelivered on
a quiet network (a locked bucket stays locked): that call must return.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence

import pytest
from google.cloud import bigquery
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule, run_state_machine_as_test
from plowline_cloud.load_jobs import FileLoadSink
from plowline_cloud.row_sink import BigQueryRowSink
from plowline_cloud.testing.google_http import (
    HttpFault,
    ScriptedGoogleHttp,
    bigquery_client,
    storage_client,
)
from plowline_core.errors import PlowlineError
from plowline_core.ports import InsertFailure, Row, RowSink
from plowline_core.schema.field import Field, FieldType, Mode
from plowline_core.testing.table import InMemoryTableSchemaStore

FIELDS = (Field("event_id", FieldType.STRING, Mode.REQUIRED),)
TABLE = bigquery.TableReference.from_string("p.d.events")
EVENTS = "tables/events"
SETTINGS = settings(
    max_examples=60, stateful_step_count=8, deadline=None, report_multiple_bugs=False
)

_F = HttpFault
_ROUTE_FAULTS = {
    "insertAll": [_F.OK, _F.BACKEND_ERROR, _F.LOST, _F.LOST_APPLIED],
    "jobs.insert": [_F.OK, _F.BACKEND_ERROR, _F.LOST, _F.LOST_APPLIED, _F.JOB_BACKEND_ERROR],
    "jobs.get": [_F.OK, _F.BACKEND_ERROR, _F.LOST],
    "upload": [_F.OK, _F.BACKEND_ERROR, _F.LOST, _F.LOST_APPLIED],
    "delete": [_F.OK, _F.BACKEND_ERROR, _F.LOST, _F.FORBIDDEN],
}
scripts = st.fixed_dictionaries(
    {
        route: st.lists(st.sampled_from(faults), max_size=3)
        for route, faults in _ROUTE_FAULTS.items()
    }
)
batches = st.lists(st.booleans(), min_size=1, max_size=4)  # one bool a row: is it bad


pytestmark = pytest.mark.usefixtures("instant_retries")  # tests/unit/cloud/conftest.py


class HttpSinkModel(RuleBasedStateMachine):
    """Deliver and redeliver rows; check the contract after every call that returns."""

    exactly_once = False

    def __init__(self) -> None:
        super().__init__()
        self.google = ScriptedGoogleHttp()
        self.sink = self.build()
        self.ids = itertools.count()
        self.undelivered: list[Row] = []

    def build(self) -> RowSink:
        """Return the sink under test, talking to ``self.google``."""
        raise NotImplementedError

    @rule(bad=batches, faults=scripts)
    def deliver(self, bad: list[bool], faults: dict[str, list[HttpFault]]) -> None:
        rows = []
        for is_bad in bad:
            event_id = f"e{next(self.ids)}"
            rows.append(Row(event_id, {"event_id": event_id}))
            if is_bad:
                self.google.bad_ids.add(event_id)
        self._insert(rows, faults)

    @precondition(lambda self: self.undelivered)
    @rule(faults=scripts)
    def redeliver(self, faults: dict[str, list[HttpFault]]) -> None:
        rows, self.undelivered = self.undelivered, []
        self._insert(rows, faults)

    def teardown(self) -> None:
        if self.undelivered:
            rows, self.undelivered = self.undelivered, []
            self._insert(rows, {}, must_return=True)

    def _insert(
        self, rows: list[Row], faults: dict[str, list[HttpFault]], *, must_return: bool = False
    ) -> None:
        self.google.faults = {route: list(script) for route, script in faults.items()}
        self.google.faults = self.adjusted(self.google.faults)
        before = self.google.count(EVENTS)
        try:
            failures = self.sink.insert(rows)
        except PlowlineError:
            if must_return:
                raise
            self.undelivered.extend(rows)
            self._check_raised(rows, before)
            return
        self._check_returned(rows, failures)

    def adjusted(self, faults: dict[str, list[HttpFault]]) -> dict[str, list[HttpFault]]:
        """Return the call's scripts as this model's world allows them."""
        return faults

    def _check_raised(self, rows: Sequence[Row], before: dict[str, int]) -> None:
        if self.exactly_once:
            after = self.google.count(EVENTS)
            landed = [
                row.insert_id
                for row in rows
                if after.get(row.insert_id, 0) > before.get(row.insert_id, 0)
            ]
            assert not landed, f"the call raised, yet loaded {landed}"

    def _check_returned(self, rows: Sequence[Row], failures: Sequence[InsertFailure]) -> None:
        failed = Counter(failure.row.insert_id for failure in failures)
        given = {row.insert_id for row in rows}
        assert set(failed) <= given, f"failures name rows not given: {set(failed) - given}"
        assert all(n == 1 for n in failed.values()), f"a row failed twice: {failed}"
        table = self.google.count(EVENTS)
        for event_id in sorted(given):
            landed = table.get(event_id, 0)
            if event_id in failed:
                assert landed == 0, f"{event_id} is both failed and in the table"
            elif self.exactly_once:
                assert landed == 1, f"{event_id}: in the table {landed} times"
            else:
                assert landed >= 1, f"{event_id}: neither in the table nor failed"


class InsertAllModel(HttpSinkModel):
    """``STREAMING_INSERTS``: insertAll (``BigQueryRowSink``), at least once."""

    def build(self) -> RowSink:
        return BigQueryRowSink(
            bigquery_client(self.google), TABLE, InMemoryTableSchemaStore(FIELDS), max_rows=2
        )


class LoadJobModel(HttpSinkModel):
    """``FILE_LOADS``: staged NDJSON and a load job (``FileLoadSink``), insertAll as fallback."""

    exactly_once = True

    def __init__(self) -> None:
        super().__init__()
        self.locked = False

    def build(self) -> RowSink:
        bq = bigquery_client(self.google)
        schema = InMemoryTableSchemaStore(FIELDS)
        fallback = BigQueryRowSink(bq, TABLE, schema)
        storage = storage_client(self.google)
        return FileLoadSink(bq, storage, "staging", TABLE, schema, fallback)

    @rule()
    def lock_the_bucket(self) -> None:
        """A retention policy (or a lost objects.delete grant): every delete is 403 now."""
        self.locked = True

    def adjusted(self, faults: dict[str, list[HttpFault]]) -> dict[str, list[HttpFault]]:
        """A locked bucket refuses every delete; a lost insertAll answer is not resent blind.

        Notes:
            The insertAll fallback resends a request whose answer was lost; BigQuery's
            insertId de-duplication (best effort) absorbs that, which this model leaves out.
        """
        insert_all = [_F.LOST if f is _F.LOST_APPLIED else f for f in faults.get("insertAll", [])]
        delete = [_F.FORBIDDEN] * 20 if self.locked else faults.get("delete", [])
        return {**faults, "insertAll": insert_all, "delete": delete}


@pytest.mark.parametrize(
    "machine",
    [
        pytest.param(InsertAllModel, id="insertAll"),
        pytest.param(LoadJobModel, id="load-jobs"),
    ],
)
def test_every_row_lands_or_fails_whatever_google_answers(machine: type[HttpSinkModel]) -> None:
    """Whatever Google answers over HTTP, a returned call accounts for each row exactly so."""
    run_state_machine_as_test(machine, settings=SETTINGS)
