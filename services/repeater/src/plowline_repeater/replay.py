"""Replay dead-end objects: put their rows back, file what fails, move the sources away.

Notes:
    Crash-safe order, per object: (1) write ``unrecoverable/<name>``, (2) send the rows,
    (3) write ``failed/<name>`` for the rows refused again and ``<stem>.rest.ndjson`` for
    the rows ``--error-matches`` left out, (4) only then move the source to
    ``replayed/<name>``. A crash before (4) leaves the source in place, so the next run
    replays its rows again: every insert carries ``insertId = event_id``, which BigQuery
    deduplicates (best effort, about a minute), and every copy keeps its ``event_id``, so
    a late duplicate can still be removed by query. Results already written by the
    crashed run are found by name and content and not written twice; the move itself is
    idempotent (``BlobStore.move``). A dependency error stops the run at the object it
    happened on, which stays in place. Republishing (``--to failed-inserts``) hands the
    rows back to ``plowline-repeater run``, which inserts them with the same insertId.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from plowline_core.badrows import Processor
from plowline_core.errors import PlowlineError
from plowline_core.messages import FailedInsert, encode_failed_insert
from plowline_core.ports import BlobStore, InsertFailure, Publisher, Row, RowSink

from plowline_repeater.dead_end import runtime_error_row
from plowline_repeater.replay_plan import (
    ObjectPlan,
    Selection,
    alternative_names,
    failed_name,
    kept_name,
    ndjson,
    plan_object,
    replayed_name,
    unrecoverable_name,
)

Refusal = tuple[FailedInsert, InsertFailure]


class Destination(Protocol):
    """Where replayed rows go: the events table or the failed-inserts topic."""

    @property
    def description(self) -> str:
        """Say where, for people (``table p.d.t``)."""
        ...

    def send(self, rows: Sequence[FailedInsert]) -> list[Refusal]:
        """Send rows; return those refused, with why (raise PlowlineError when unavailable)."""
        ...


class TableDestination:
    """Insert rows into the events table with ``insertId = event_id``."""

    def __init__(self, sink: RowSink, table: str) -> None:
        self._sink = sink
        self.description = f"table {table}"

    def send(self, rows: Sequence[FailedInsert]) -> list[Refusal]:
        """Insert rows; return the refused ones."""
        batch = [Row(insert_id=failed.event_id, data=failed.row) for failed in rows]
        by_row = {id(row): failed for row, failed in zip(batch, rows, strict=True)}
        return [(by_row[id(failure.row)], failure) for failure in self._sink.insert(batch)]


class TopicDestination:
    """Publish rows to the failed-inserts topic, for ``plowline-repeater run`` to insert."""

    def __init__(self, publisher: Publisher, topic: str) -> None:
        self._publisher = publisher
        self.description = f"topic {topic}"

    def send(self, rows: Sequence[FailedInsert]) -> list[Refusal]:
        """Publish rows (nothing is refused: a publish succeeds whole or raises)."""
        self._publisher.publish([encode_failed_insert(failed.row) for failed in rows])
        return []


@dataclass(frozen=True, slots=True)
class ObjectOutcome:
    """What replay did (or would do, in a dry run) with one object."""

    plan: ObjectPlan
    recovered: int
    failed: int
    written: tuple[str, ...] = ()
    moved_to: str | None = None

    @property
    def name(self) -> str:
        """The source object's name."""
        return self.plan.name


@dataclass(slots=True)
class ReplayReport:
    """Everything a replay run did, for the summary and the exit code."""

    selection: Selection
    dry_run: bool
    outcomes: list[ObjectOutcome] = field(default_factory=list)
    stopped_at: str | None = None
    error: str | None = None

    @property
    def recovered(self) -> int:
        """Rows now in the table or on the topic (in a dry run: rows that would be sent)."""
        return sum(outcome.recovered for outcome in self.outcomes)

    @property
    def failed(self) -> int:
        """Rows the destination refused again."""
        return sum(outcome.failed for outcome in self.outcomes)

    @property
    def unrecoverable(self) -> int:
        """Lines that hold no failed-insert row."""
        return sum(len(outcome.plan.unrecoverable) for outcome in self.outcomes)

    @property
    def kept(self) -> int:
        """Rows ``--error-matches`` left out."""
        return sum(len(outcome.plan.kept) for outcome in self.outcomes)

    @property
    def exit_code(self) -> int:
        """Return 0 when everything taken was recovered (or nothing to do), else 1."""
        if self.error is not None:
            return 1
        if self.dry_run:
            return 0
        return 1 if self.failed or self.unrecoverable else 0


class Replayer:
    """Replay the chosen objects of a dead-end path into a destination."""

    def __init__(
        self, store: BlobStore, destination: Destination | None, processor: Processor
    ) -> None:
        self._store = store
        self._destination = destination
        self._processor = processor

    def run(
        self,
        selection: Selection,
        matcher: re.Pattern[str] | None,
        on_object: Callable[[ObjectOutcome], None] = lambda outcome: None,
    ) -> ReplayReport:
        """Replay every chosen object in name order; stop at the first dependency error.

        Notes:
            Without a destination this is a dry run: objects are read, nothing is written.
        """
        report = ReplayReport(selection, dry_run=self._destination is None)
        for source in selection.chosen:
            try:
                plan = plan_object(source, self._store.get(source.name), matcher)
                outcome = self._replay(plan)
            except PlowlineError as error:
                report.stopped_at, report.error = source.name, str(error)
                break
            report.outcomes.append(outcome)
            on_object(outcome)
        return report

    def _replay(self, plan: ObjectPlan) -> ObjectOutcome:
        destination = self._destination
        if destination is None or not plan.has_work:
            return ObjectOutcome(plan, recovered=len(plan.rows), failed=0)
        written: list[str] = []
        if plan.unrecoverable:
            body = ndjson([item.line for item in plan.unrecoverable])
            written.append(self._put_once(unrecoverable_name(plan.name), body))
        refused = destination.send([row.failed for row in plan.rows]) if plan.rows else []
        if refused:
            body = ndjson([self._bad_row(failed, failure) for failed, failure in refused])
            written.append(self._put_once(failed_name(plan.name), body))
        if plan.kept:
            written.append(self._put_once(kept_name(plan.name), ndjson(plan.kept)))
        moved_to = replayed_name(plan.name)
        self._store.move(plan.name, moved_to)
        recovered = len(plan.rows) - len(refused)
        return ObjectOutcome(plan, recovered, len(refused), tuple(written), moved_to)

    def _bad_row(self, failed: FailedInsert, failure: InsertFailure) -> bytes:
        return runtime_error_row(failed, failure).to_json(self._processor)

    def _put_once(self, name: str, body: bytes) -> str:
        """Write ``body`` under ``name``, or find it there from a crashed run; return the name.

        Notes:
            A name taken by other content (a crashed run whose retry came out differently)
            is kept, and the body goes to the next free ``<stem>.N.ndjson``.
        """
        taken = set(self._store.list(name.removesuffix(".ndjson")))
        for candidate in alternative_names(name):
            if candidate not in taken:
                self._store.put(candidate, body)
                return candidate
            if self._store.get(candidate) == body:
                return candidate
        raise AssertionError("unreachable: alternative_names never ends")
