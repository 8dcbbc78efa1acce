"""The Write API sinks held to the delivery contract under arbitrary answers from Google.

A hypothesis state machine delivers batches of rows to a sink (and redelivers the rows of
every call that raised), while a scripted fake of Google's Write API (``ScriptedWriteClient``)
answers each request with a drawn fault: row errors (the bad rows), in-band INTERNAL /
UNAVAILABLE, the schema race, lost answers before or after the append, timeouts, a stream
finalized under the writer, failed or lost commits. After every call that returns: every
row given is in the table, or in the failures returned, never both, never neither; in the
default mode at most once more than the calls that raised with it, in exactly-once mode
exactly once. At the end every raised row is redelivered on a quiet network: that call
must return and restore the same invariant.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest
from google.cloud import bigquery
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from plowline_cloud.testing.google_http import ScriptedGoogleHttp, bigquery_client
from plowline_cloud.testing.google_write import AppendFault, CommitFault, ScriptedWriteClient
from plowline_cloud.write_api_committed import WriteApiRowSink
from plowline_cloud.write_api_pending import ExactlyOnceSink
from plowline_core.errors import PlowlineError
from plowline_core.ports import InsertFailure, Row, RowSink
from plowline_core.schema.field import Field, FieldType, Mode
from plowline_core.testing.table import InMemoryTableSchemaStore

FIELDS = (Field("event_id", FieldType.STRING, Mode.REQUIRED),)
STAMP = Field("collector_tstamp", FieldType.TIMESTAMP)
TABLE = bigquery.TableReference.from_string("p.d.events")
EVENTS = "tables/events"
SETTINGS = settings(
    max_examples=120, stateful_step_count=12, deadline=None, report_multiple_bugs=False
)

appends = st.lists(st.sampled_from(AppendFault), max_size=10)
commits = st.lists(st.sampled_from(CommitFault), max_size=4)
batches = st.lists(st.booleans(), min_size=1, max_size=5)  # one bool a row: is it bad


class SinkModel(RuleBasedStateMachine):
    """Deliver and redeliver rows; check the contract after every call that returns."""

    exactly_once = False
    more_data: dict[str, Any] = {}

    def __init__(self) -> None:
        super().__init__()
        self.google = ScriptedWriteClient()
        self.sink = self.build()
        self.ids = itertools.count()
        self.undelivered: list[Row] = []
        self.raised: Counter[str] = Counter()

    def build(self) -> RowSink:
        """Return the sink under test, talking to ``self.google``."""
        raise NotImplementedError

    @rule(bad=batches, faults=appends, commit_faults=commits)
    def deliver(self, bad: list[bool], faults: list[AppendFault], commit_faults: Any) -> None:
        rows = []
        for is_bad in bad:
            event_id = f"e{next(self.ids)}"
            rows.append(Row(event_id, {"event_id": event_id, **self.more_data}))
            if is_bad:
                self.google.bad_ids.add(event_id)
        self._insert(rows, faults, commit_faults)

    @precondition(lambda self: self.undelivered)
    @rule(faults=appends, commit_faults=commits)
    def redeliver(self, faults: list[AppendFault], commit_faults: list[CommitFault]) -> None:
        rows, self.undelivered = self.undelivered, []
        self._insert(rows, faults, commit_faults)

    @invariant()
    def nothing_lands_past_the_promise(self) -> None:
        table = self.google.committed(EVENTS)
        for event_id, count in table.items():
            assert event_id not in self.google.bad_ids, f"{event_id}: a refused row landed"
            if self.exactly_once:
                assert count == 1, f"{event_id} is in the table {count} times"

    def teardown(self) -> None:
        if self.undelivered:
            rows, self.undelivered = self.undelivered, []
            self._insert(rows, [], [], must_return=True)

    def _insert(
        self,
        rows: list[Row],
        faults: list[AppendFault],
        commit_faults: list[CommitFault],
        *,
        must_return: bool = False,
    ) -> None:
        self.google.appends = list(faults)
        self.google.commits = list(commit_faults)
        try:
            failures = self.sink.insert(rows)
        except PlowlineError:
            if must_return:
                raise
            self.undelivered.extend(rows)
            self.raised.update(row.insert_id for row in rows)
            return
        self._check_returned(rows, failures)

    def _check_returned(self, rows: Sequence[Row], failures: Sequence[InsertFailure]) -> None:
        failed = Counter(failure.row.insert_id for failure in failures)
        given = {row.insert_id for row in rows}
        assert set(failed) <= given, f"failures name rows not given: {set(failed) - given}"
        assert all(n == 1 for n in failed.values()), f"a row failed twice: {failed}"
        table = self.google.committed(EVENTS)
        for event_id in sorted(given):
            landed = table[event_id]
            if event_id in failed:
                assert landed == 0, f"{event_id} is both failed and in the table"
            elif self.exactly_once:
                assert landed == 1, f"{event_id}: in the table {landed} times"
            else:
                ceiling = 1 + self.raised[event_id]
                assert 1 <= landed <= ceiling, f"{event_id}: in the table {landed} times"


class OffsetsModel(SinkModel):
    """``load.stream: default``: a COMMITTED stream with offsets (``WriteApiRowSink``)."""

    def build(self) -> RowSink:
        return WriteApiRowSink(
            self.google,  # type: ignore[arg-type]  # Google's side, scripted
            TABLE,
            InMemoryTableSchemaStore(FIELDS),
            max_request_rows=2,
            attempts=3,
            sleep=lambda _: None,
        )


class ExactlyOnceModel(SinkModel):
    """``load.stream: exactly-once``: PENDING streams behind a ledger (``ExactlyOnceSink``)."""

    exactly_once = True

    partition_column: str | None = None

    def build(self) -> RowSink:
        http = ScriptedGoogleHttp(
            tables=lambda: self.google.tables, require_partition_filter=self.partition_column
        )
        return ExactlyOnceSink(
            self.google,  # type: ignore[arg-type]  # Google's side, scripted
            bigquery_client(http),
            TABLE,
            "p.d.events_ledger",
            InMemoryTableSchemaStore(FIELDS + (STAMP,)),
            max_request_rows=2,
            attempts=3,
            sleep=lambda _: None,
        )


class PartitionFilterModel(ExactlyOnceModel):
    """Exactly-once on a table created with ``--requirePartitionFilter``."""

    partition_column = "collector_tstamp"
    more_data = {"collector_tstamp": "2026-11-20T10:00:00+00:00"}


@pytest.mark.parametrize(
    "machine",
    [
        pytest.param(OffsetsModel, id="default-stream-offsets"),
        pytest.param(ExactlyOnceModel, id="exactly-once"),
        pytest.param(PartitionFilterModel, id="exactly-once-partition-filter"),
    ],
)
def test_every_row_lands_or_fails_whatever_google_answers(machine: type[SinkModel]) -> None:
    """Whatever Google answers, a returned call accounts for each of its rows exactly so."""
    examples = 50 if machine.exactly_once else 120  # exactly-once: ~4 times the calls a step
    run_state_machine_as_test(machine, settings=settings(SETTINGS, max_examples=examples))
