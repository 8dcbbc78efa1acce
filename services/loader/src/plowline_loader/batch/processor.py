"""The loader's per-batch work: enriched TSV messages in, table rows, bad rows and types out.

``BatchProcessor.process(messages)`` routes every message to exactly one outcome:

    good row        inserted into the table (insertId = event_id)
    failed insert   the table refused the row, or it needs a column the table lacks:
                    the BigQuery-JSON row goes to the failedInserts topic (for a 2.x
                    config a row refused as invalid is 2.x's ``loader_runtime_error``
                    bad row instead: ``failed_events``)
    bad row         the line did not parse or its entities did not validate, or the row,
                    its bad row or its failed insert is over a size limit
                    (``size_violation``), or it is a compressed batch's oversized record
                    or corruption (``failed_events.FailedRecord``): badRows topic

and announces on the types topic the entity types whose column the table lacks
(``announcements``). A message is one event: a compressed batch arrives opened into its
records (``compressed_input``), each with its delivery's ack id. What a row, a bad row
and a failed insert may weigh is ``sizes``'s.

Notes:
    Pure over the ports: no Spark, no Google, the time comes from the injected clock.
    Returning is the promise that every outcome is durable (the insert returned, every
    publish confirmed), so the caller may ack. An exception means nothing may be acked,
    except ``PartlyDelivered``: the insert returned, then a publish failed; its rows are
    durable and must be acked (handing them back would insert them again on every retry,
    past BigQuery's insertId window); only the messages it names are handed back.
    ``RegistryUnavailable`` (a ``TransientError``) is raised before anything is written,
    so a registry outage never turns good events into bad rows. Types are published
    before the insert, so the mutator starts adding columns as early as possible.
    Invariant, checked on every batch: ``good + bad + failed == events_in``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import NamedTuple

import structlog
from plowline_core.badrows import BadRow, Processor
from plowline_core.errors import PermanentError, PlowlineError, TransientError
from plowline_core.event.model import EnrichedEvent
from plowline_core.event.parser import parse_bytes
from plowline_core.ports import (
    Clock,
    HandOverLog,
    InsertFailure,
    InsertReason,
    Publisher,
    Row,
    RowSink,
    TableSchemaStore,
)
from plowline_core.schema.entity import EntityType
from plowline_core.transform.row import RowBuilder, TransformedRow

from plowline_loader.batch.announcements import TypeTracker, announce, distinct_types
from plowline_loader.batch.failed_events import (
    FailedEventStyle,
    FailedRecord,
    failed_record_bad_row,
    runtime_error,
)
from plowline_loader.batch.message import (
    InboundMessage,
    Message,
    collector_latencies,
    publish_latencies,
    violation_time,
)
from plowline_loader.batch.outcome import (
    BatchOutcome,
    PartlyDelivered,
    check_accounts,
)
from plowline_loader.batch.schema_hold import NO_HOLD, SchemaHold
from plowline_loader.batch.sizes import Limits, SizeChecks, iso_stamp

_log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class Destinations:
    """Where a batch's outcomes go: the table, and the three topics.

    ``hand_over`` (exactly-once mode only): where the ids of the failed inserts are
    marked as the repeater's once their publish is durable, so that a later copy of one
    reaching the loader is acked, not written (see ``plowline_cloud.write_api_pending``).
    """

    schema: TableSchemaStore
    table: RowSink
    types: Publisher
    bad_rows: Publisher
    failed_inserts: Publisher
    hand_over: HandOverLog | None = None


class _Good(NamedTuple):
    row: Row
    message: Message
    types: frozenset[EntityType]


class _Sorted(NamedTuple):
    goods: list[_Good]
    bad_rows: list[bytes]
    bad_by_code: Counter[str]
    bad_messages: list[Message]  # one per bad row, in order
    held: list[Message]  # waiting for a missing schema (``schema_hold``)
    held_schemas: set[str]


class _Refused(NamedTuple):
    """The table's refusals, split by where each goes."""

    failed: list[InsertFailure]  # published to failedInserts (``payloads``, same order)
    payloads: list[bytes]
    bad_rows: list[bytes]  # too big to publish as failed inserts, or 2.x's runtime errors
    failed_messages: list[Message]  # the message of each failed insert
    bad_messages: list[Message]  # the message of each bad row
    bad_codes: list[str]  # the failure code of each bad row


class _Stage(Enum):
    """What ``deliver`` was publishing after the insert when a publish failed."""

    FAILED = "failed inserts"
    BAD = "bad rows"


class _Delivered(NamedTuple):
    """What ``deliver`` had done when a publish after the insert failed."""

    failures: Sequence[InsertFailure]
    refused: _Refused
    published: int
    inserted_at: datetime


class PreparedBatch(NamedTuple):
    """A batch transformed and sorted by ``BatchProcessor.prepare``, not yet written."""

    messages: Sequence[Message]
    batch: _Sorted
    started: datetime


class BatchProcessor:
    """Transform a batch of enriched TSV messages and make every outcome durable."""

    def __init__(
        self,
        builder: RowBuilder,
        destinations: Destinations,
        tracker: TypeTracker,
        clock: Clock,
        processor: Processor,
        limits: Limits | None = None,
        style: FailedEventStyle = FailedEventStyle.LOADER_1X,
        hold: SchemaHold = NO_HOLD,
    ) -> None:
        self._builder = builder
        self._style = style
        self._hold = hold
        self._to = destinations
        self._tracker = tracker
        self._clock = clock
        self._sizes = SizeChecks(limits or Limits(), processor, style)
        self._processor = processor

    def process(self, messages: Sequence[Message]) -> BatchOutcome:
        """Route every message to the table, failedInserts or badRows; return the counts.

        Raises:
            TransientError: a registry, the table or a topic is failing; ack nothing.
        """
        return self.deliver(self.prepare(messages))

    def prepare(self, messages: Sequence[Message]) -> PreparedBatch:
        """Transform every message; write nothing (the first half of ``process``).

        Raises:
            RegistryUnavailable: a registry is failing; nothing was written.
        """
        started = self._clock.now()
        return PreparedBatch(messages, self._sort(messages, started), started)

    def deliver(self, prepared: PreparedBatch) -> BatchOutcome:
        """Write a prepared batch's outcomes and return the counts (the second half).

        Notes:
            May run in another thread than ``prepare`` (one ``deliver`` at a time): the
            two share no mutable state.

        Raises:
            PartlyDelivered: a publish failed (transient or permanent) after the insert
                returned; ack all but the messages it names.
            TransientError: the table or a topic is failing; ack nothing of this batch.
        """
        messages, batch, started = prepared
        published = self._publish_missing_types(batch.goods, started)
        failures = self._to.table.insert([good.row for good in batch.goods]) if batch.goods else []
        inserted_at = self._clock.now()
        refused = self._refused(batch.goods, failures, started)
        stage = _Stage.FAILED
        try:
            published += self._publish_implicated_types(batch.goods, failures, inserted_at)
            if refused.payloads:
                self._to.failed_inserts.publish(refused.payloads)
                self._mark_handed_over(refused.failed)
            stage = _Stage.BAD
            if batch.bad_rows or refused.bad_rows:
                self._to.bad_rows.publish(batch.bad_rows + refused.bad_rows)
        except (TransientError, PermanentError) as error:
            # Even a permanent refusal (topic deleted, permission revoked) must not hand
            # back the rows just inserted: the partition would fail and insert them again.
            delivered = _Delivered(failures, refused, published, inserted_at)
            raise self._partly(prepared, delivered, stage, error) from error
        outcome = self._outcome(messages, batch, failures, refused, published, started, inserted_at)
        check_accounts(outcome)
        return outcome

    def _mark_handed_over(self, failed: Sequence[InsertFailure]) -> None:
        """Mark the published failed inserts as the repeater's (exactly-once mode).

        Notes:
            Best effort: the failed inserts are durable, so a failing mark must not hand
            their messages back (they would be published twice); it is logged as a
            warning. An unmarked id is left where every id was before hand-overs existed:
            a later copy reaching the loader may race the repeater (see
            ``plowline_cloud.write_api_pending``).
        """
        if self._to.hand_over is None:
            return
        ids = [failure.row.insert_id for failure in failed]
        try:
            self._to.hand_over.hand_over(ids)
        except (TransientError, PermanentError) as error:
            _log.warning(
                "failed inserts handed to the repeater without a ledger mark",
                events=len(ids),
                error=str(error),
                risk="a later copy of one of these events reaching the loader may be"
                " written by both the loader and the repeater (a duplicate row)",
                first_event_id=ids[0] if ids else None,
            )

    def _partly(
        self, prepared: PreparedBatch, delivered: _Delivered, stage: _Stage, error: PlowlineError
    ) -> PartlyDelivered:
        """Return the error naming what the failed publish left not durable."""
        messages, batch, started = prepared
        failures, refused, published, inserted_at = delivered
        pending = batch.bad_messages + refused.bad_messages
        kept = refused._replace(bad_rows=[], bad_messages=[], bad_codes=[])
        if stage is _Stage.FAILED:
            pending += refused.failed_messages
            kept = kept._replace(failed=[], payloads=[], failed_messages=[])
        durable = batch._replace(bad_rows=[], bad_by_code=Counter(), bad_messages=[])
        outcome = self._outcome(
            messages, durable, failures, kept, published, started, inserted_at, len(pending)
        )
        check_accounts(outcome)
        return PartlyDelivered(
            f"{error} (after the insert: {len(pending)} messages handed back)",
            outcome,
            frozenset(message.message_id for message in pending),
        )

    def _sort(self, messages: Sequence[Message], now: datetime) -> _Sorted:
        goods: list[_Good] = []
        bad_rows: list[bytes] = []
        bad_messages: list[Message] = []
        codes: Counter[str] = Counter()
        held: list[Message] = []
        held_schemas: set[str] = set()
        sizes = self._sizes
        for message in messages:
            if type(message) is FailedRecord:
                failed = self._failed_record(message, now)
                encoded, code = sizes.bad_row(failed, message.data, violation_time(message, now))
                bad_rows.append(encoded)
                bad_messages.append(message)
                codes[code] += 1
                continue
            result = self._transform(message.data)
            if isinstance(result, TransformedRow):
                oversized = None
                if sizes.may_be_oversized(message.data):
                    oversized = sizes.oversized_row(
                        result, message.data, violation_time(message, now)
                    )
                if oversized is None:
                    goods.append(_Good(Row(result.event_id, result.data), message, result.types))
                    continue
                result = oversized
            missing = self._hold.missing(result, message.publish_time_us, now)
            if missing:
                held.append(message)
                held_schemas.update(missing)
                continue
            encoded, code = sizes.bad_row(result, message.data, violation_time(message, now))
            bad_rows.append(encoded)
            bad_messages.append(message)
            codes[code] += 1
        return _Sorted(goods, bad_rows, codes, bad_messages, held, held_schemas)

    def _failed_record(self, record: FailedRecord, now: datetime) -> BadRow:
        """Return the failed event of a compressed batch's oversized record or corruption."""
        stamp = iso_stamp(violation_time(record, now))
        limit = self._sizes.limits.max_bad_row_bytes
        return failed_record_bad_row(record.failure, record.data, stamp, limit, self._processor)

    def _transform(self, data: bytes) -> TransformedRow | BadRow:
        try:
            return self._builder.transform_line(data.decode("utf-8"))
        except UnicodeDecodeError:
            parsed = parse_bytes(data)  # not UTF-8: the parser's own bad row
            return self._builder.build(parsed) if isinstance(parsed, EnrichedEvent) else parsed

    def _refused(
        self, goods: Sequence[_Good], failures: Sequence[InsertFailure], now: datetime
    ) -> _Refused:
        """Encode the failed inserts; one too big for a Pub/Sub message becomes a bad row."""
        refused = _Refused([], [], [], [], [], [])
        sources = {id(good.row): good.message for good in goods} if failures else {}
        for failure in failures:
            message = sources.get(id(failure.row), InboundMessage(b"", ""))
            stamp = violation_time(message, now)
            error = None
            if self._style is FailedEventStyle.LOADER_2X:
                error = runtime_error(failure, message.data)
            if error is not None:
                payload, code = self._sizes.bad_row(error, message.data, stamp)
            else:
                payload, failed_code = self._sizes.failed_insert(failure, message.data, stamp)
                if failed_code is None:
                    refused.failed.append(failure)
                    refused.payloads.append(payload)
                    refused.failed_messages.append(message)
                    continue
                code = failed_code
            refused.bad_rows.append(payload)
            refused.bad_messages.append(message)
            refused.bad_codes.append(code)
        return refused

    def _publish_missing_types(self, goods: Sequence[_Good], now: datetime) -> int:
        types = distinct_types(good.types for good in goods)
        if not types:
            return 0
        missing = self._tracker.missing(types, self._to.schema.fields(), now)
        return announce(self._tracker, self._to.types, missing, now)

    def _publish_implicated_types(
        self, goods: Sequence[_Good], failures: Sequence[InsertFailure], now: datetime
    ) -> int:
        unknown = [f for f in failures if f.reason is InsertReason.UNKNOWN_FIELD and f.location]
        if not unknown:
            return 0
        columns = {str(f.location).split(".", 1)[0] for f in unknown}
        refused = {id(f.row) for f in unknown}
        types = distinct_types(good.types for good in goods if id(good.row) in refused)
        implicated = self._tracker.implicated(types, columns, now)
        return announce(self._tracker, self._to.types, implicated, now)

    def _outcome(
        self,
        messages: Sequence[Message],
        batch: _Sorted,
        failures: Sequence[InsertFailure],
        refused: _Refused,
        types_published: int,
        started: datetime,
        inserted_at: datetime,
        handed_back: int = 0,
    ) -> BatchOutcome:
        landed = batch.goods
        if failures:
            not_landed = {id(failure.row) for failure in failures}
            landed = [good for good in landed if id(good.row) not in not_landed]
        bad_by_code = Counter(batch.bad_by_code)
        bad_by_code.update(refused.bad_codes)
        return BatchOutcome(
            events_in=len(messages) - handed_back - len(batch.held),
            good=len(landed),
            bad=len(batch.bad_rows) + len(refused.bad_rows),
            failed=len(refused.failed),
            types_published=types_published,
            duration_s=(self._clock.now() - started).total_seconds(),
            bad_by_code=dict(bad_by_code),
            failed_by_reason=dict(Counter(str(f.reason) for f in refused.failed)),
            collector_latency_s=collector_latencies(
                [good.row.data for good in landed], inserted_at
            ),
            publish_latency_s=publish_latencies(
                [good.message.publish_time_us for good in landed], inserted_at
            ),
            held_ids=frozenset(message.message_id for message in batch.held),
            held_schemas=frozenset(batch.held_schemas),
        )
