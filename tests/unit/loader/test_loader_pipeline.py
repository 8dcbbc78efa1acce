"""BatchProcessor: every message routed to exactly one durable outcome; chunked partitions."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from plowline_cloud.pubsub.pulled import PulledMessage
from plowline_core.badrows import Processor
from plowline_core.config import BigQueryConfig
from plowline_core.errors import RegistryUnavailable, TransientError
from plowline_core.event.fields import ATOMIC_COLUMNS
from plowline_core.iglu.config import EmbeddedConnection, RepositoryRef
from plowline_core.iglu.key import SchemaKey
from plowline_core.iglu.resolver import Resolver
from plowline_core.messages import decode_types
from plowline_core.ports import InsertFailure, InsertReason, Row
from plowline_core.schema.columns import column_field as schema_column
from plowline_core.schema.entity import ColumnMode, EntityType, ShredProperty
from plowline_core.schema.field import Field
from plowline_core.testing.clock import FixedClock
from plowline_core.testing.registry import InMemoryRegistry
from plowline_core.testing.sinks import InMemoryPublisher, InMemoryRowSink
from plowline_core.testing.table import InMemoryTableSchemaStore
from plowline_core.testing.tsv import enriched_line, with_entities
from plowline_core.transform.row import RowBuilder
from plowline_loader.batch.announcements import TypeTracker
from plowline_loader.batch.message import InboundMessage
from plowline_loader.batch.outcome import AccountingError, BatchOutcome
from plowline_loader.batch.processor import BatchProcessor, Destinations, PreparedBatch
from plowline_loader.batch.sizes import Limits
from plowline_loader.bootstrap import WorkerConfig
from plowline_loader.partition import chunking_for, process_in_chunks
from support.configs import bigquery_config

CTX = SchemaKey.parse("iglu:com.acme/ctx/jsonschema/1-0-0")
CLICK = SchemaKey.parse("iglu:com.acme/click/jsonschema/1-0-0")
STRICT = SchemaKey.parse("iglu:com.acme/strict/jsonschema/1-0-0")
NOW = datetime(2024, 5, 1, 10, 0, 5, tzinfo=UTC)
PROCESSOR = Processor("plowline-loader", "0.1.0")

SCHEMAS: dict[SchemaKey, dict[str, Any]] = {
    CTX: {"type": "object", "properties": {"a": {"type": "integer"}}},
    CLICK: {"type": "object", "properties": {"x": {"type": "string"}}},
    STRICT: {
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "required": ["n"],
        "additionalProperties": False,
    },
}


def column_field(key: SchemaKey, shred: ShredProperty) -> Field:
    """Return the table column an entity type needs (full column mode)."""
    return schema_column(key, SCHEMAS[key], shred, ColumnMode.FULL)


def atomic_fields() -> list[Field]:
    """Return the atomic columns of the events table."""
    return list(ATOMIC_COLUMNS)


@dataclass
class Rig:
    """A BatchProcessor and the fakes behind it."""

    processor: BatchProcessor
    registry: InMemoryRegistry
    table: InMemoryTableSchemaStore
    sink: InMemoryRowSink
    types: InMemoryPublisher
    bad_rows: InMemoryPublisher
    failed_inserts: InMemoryPublisher
    clock: FixedClock

    def published_types(self) -> list[list[EntityType]]:
        """Return each types message, decoded."""
        decoded = [decode_types(data) for data in self.types.messages]
        return [d for d in decoded if isinstance(d, list)]

    def bad_schemas(self) -> list[str]:
        """Return the schema URI of each published bad row."""
        return [json.loads(data)["schema"] for data in self.bad_rows.messages]

    def failed_event_ids(self) -> list[str]:
        """Return the event id of each published failed insert."""
        return [json.loads(data)["event_id"] for data in self.failed_inserts.messages]


def make_rig(
    columns: list[Field] | None = None,
    limits: Limits | None = None,
    sink: InMemoryRowSink | None = None,
) -> Rig:
    """Build a rig whose table has the atomic columns plus ``columns`` (and ``sink``)."""
    registry = InMemoryRegistry("acme", SCHEMAS)
    ref = RepositoryRef("acme", 0, (), EmbeddedConnection("acme"))
    clock = FixedClock(NOW)
    table = InMemoryTableSchemaStore(atomic_fields() + list(columns or []))
    sink = sink if sink is not None else InMemoryRowSink(table)
    types, bad, failed = InMemoryPublisher(), InMemoryPublisher(), InMemoryPublisher()
    builder = RowBuilder(Resolver([(ref, registry)], clock), ColumnMode.FULL)
    processor = BatchProcessor(
        builder,
        Destinations(table, sink, types, bad, failed),
        TypeTracker(ColumnMode.FULL),
        clock,
        PROCESSOR,
        limits,
    )
    return Rig(processor, registry, table, sink, types, bad, failed, clock)


def message(line: str, index: int = 0) -> InboundMessage:
    """Wrap a TSV line as a Pub/Sub message published one second before NOW."""
    return InboundMessage(
        line.encode(), f"m-{index}", _micros(datetime(2024, 5, 1, 10, 0, 4, tzinfo=UTC))
    )


@pytest.fixture
def rig() -> Rig:
    """A rig whose table has the atomic columns and the com.acme/ctx context column."""
    return make_rig([column_field(CTX, ShredProperty.CONTEXTS)])


SIZE_VIOLATION = "iglu:com.snowplowanalytics.snowplow.badrows/size_violation/jsonschema/1-0-0"
PARSING_ERROR = "iglu:com.snowplowanalytics.snowplow.badrows/loader_parsing_error/jsonschema/2-0-0"
IGLU_ERROR = "iglu:com.snowplowanalytics.snowplow.badrows/loader_iglu_error/jsonschema/2-0-0"


def _eid() -> str:
    return str(uuid.uuid4())


def _ctx_line(event_id: str, a: int = 1) -> str:
    return with_entities(contexts=[(CTX.to_uri(), {"a": a})], event_id=event_id)


def _click_line(event_id: str) -> str:
    return with_entities(unstruct_event=(CLICK.to_uri(), {"x": "y"}), event_id=event_id)


def test_good_rows_land_with_event_id_as_insert_id(rig: Rig) -> None:
    """Events whose columns exist are inserted with insertId = event_id."""
    ids = [_eid() for _ in range(3)]

    rig.processor.process([message(_ctx_line(i), n) for n, i in enumerate(ids)])

    assert ids == rig.sink.insert_ids


def test_bad_line_becomes_a_parsing_bad_row(rig: Rig) -> None:
    """A line that is not enriched TSV is published as a loader_parsing_error bad row."""
    outcome = rig.processor.process([message("not\ta\tvalid\tline")])

    assert (rig.bad_schemas(), outcome.bad, len(rig.sink.rows)) == ([PARSING_ERROR], 1, 0)


def test_invalid_entity_becomes_an_iglu_bad_row(rig: Rig) -> None:
    """An entity that does not validate against its schema is a loader_iglu_error bad row."""
    line = with_entities(contexts=[(STRICT.to_uri(), {"n": "nope"})], event_id=_eid())

    rig.processor.process([message(line)])

    assert rig.bad_schemas() == [IGLU_ERROR]


def test_non_utf8_bytes_become_a_bad_row(rig: Rig) -> None:
    """A message that is not UTF-8 becomes a parsing bad row, not an exception."""
    outcome = rig.processor.process([InboundMessage(b"\xff\xfe\tbroken", "m-1")])

    assert (rig.bad_schemas(), outcome.bad) == ([PARSING_ERROR], 1)


def test_row_needing_a_missing_column_goes_to_failed_inserts(rig: Rig) -> None:
    """A row with an entity the table has no column for is published to failedInserts."""
    event_id = _eid()

    outcome = rig.processor.process([message(_click_line(event_id))])

    assert ([event_id], 1, []) == (rig.failed_event_ids(), outcome.failed, rig.sink.rows)


def test_new_type_is_published_when_the_table_lacks_its_column(rig: Rig) -> None:
    """An unstruct event without a column publishes its type as a JSON array."""
    rig.processor.process([message(_click_line(_eid()))])

    assert [[EntityType(CLICK, ShredProperty.UNSTRUCT_EVENT)]] == rig.published_types()


def test_known_type_is_not_published(rig: Rig) -> None:
    """A context whose column the table has is never announced."""
    rig.processor.process([message(_ctx_line(_eid()))])

    assert rig.types.messages == []


def test_new_type_is_published_once_across_batches(rig: Rig) -> None:
    """The same missing type seen in three batches is published once per process."""
    for _ in range(3):
        rig.processor.process([message(_click_line(_eid())), message(_click_line(_eid()), 1)])

    assert len(rig.types.messages) == 1


def test_new_type_is_published_again_after_the_republish_period(rig: Rig) -> None:
    """A type still missing ten minutes after its announcement is announced again."""
    rig.processor.process([message(_click_line(_eid()))])
    rig.clock.advance(601)

    rig.processor.process([message(_click_line(_eid()))])

    assert len(rig.types.messages) == 2


def test_type_is_published_when_a_row_with_it_is_refused_for_a_nested_field() -> None:
    """A refusal naming a field under a type's existing column announces that type."""
    column = "contexts_com_acme_ctx_1_0_0"

    def refuse(row: Row) -> InsertFailure:
        return InsertFailure(row, InsertReason.UNKNOWN_FIELD, "no such field", f"{column}.b")

    rig = make_rig([column_field(CTX, ShredProperty.CONTEXTS)], sink=InMemoryRowSink(reject=refuse))

    rig.processor.process([message(_ctx_line(_eid()))])

    assert [[EntityType(CTX, ShredProperty.CONTEXTS)]] == rig.published_types()


def test_rows_the_sink_rejects_go_to_failed_inserts() -> None:
    """A row BigQuery refuses as invalid is published to failedInserts as it was sent."""
    event_id = _eid()

    def refuse(row: Row) -> InsertFailure:
        return InsertFailure(row, InsertReason.INVALID, "bad value")

    rig = make_rig([column_field(CTX, ShredProperty.CONTEXTS)], sink=InMemoryRowSink(reject=refuse))

    outcome = rig.processor.process([message(_ctx_line(event_id))])

    assert ([event_id], {"invalid": 1}) == (rig.failed_event_ids(), outcome.failed_by_reason)


def test_oversized_row_becomes_a_size_violation_with_a_cut_payload() -> None:
    """A row over the insertAll limit becomes a size_violation whose JSON fits the bad-row limit."""
    rig = make_rig(limits=Limits(max_row_bytes=4_000, max_bad_row_bytes=2_000))
    line = enriched_line(event_id=_eid(), page_title="t" * 5_000)

    rig.processor.process([message(line)])

    bad = rig.bad_rows.messages
    assert (rig.bad_schemas(), len(bad[0]) <= 2_000, rig.sink.rows) == ([SIZE_VIOLATION], True, [])


def test_oversized_bad_row_becomes_a_size_violation() -> None:
    """A bad row over the Pub/Sub budget is replaced by a size_violation that fits it."""
    rig = make_rig(limits=Limits(max_bad_row_bytes=3_000))

    rig.processor.process([message("broken\t" + "z" * 10_000)])

    payload = json.loads(rig.bad_rows.messages[0])["data"]["payload"]
    assert (rig.bad_schemas(), payload.startswith("broken\tzzz")) == ([SIZE_VIOLATION], True)


def test_registry_outage_raises_and_writes_nothing(rig: Rig) -> None:
    """With the registry down the batch raises a TransientError and nothing is written."""
    rig.registry.failing = True
    batch = [message(_click_line(_eid())), message("bad line", 1), message(_ctx_line(_eid()), 2)]

    with pytest.raises(TransientError):
        rig.processor.process(batch)

    written = (
        rig.sink.rows,
        rig.types.messages,
        rig.bad_rows.messages,
        rig.failed_inserts.messages,
    )
    assert written == ([], [], [], [])


def test_registry_outage_error_is_registry_unavailable(rig: Rig) -> None:
    """The transient error of an Iglu outage is RegistryUnavailable (readiness goes false)."""
    rig.registry.failing = True

    with pytest.raises(RegistryUnavailable):
        rig.processor.process([message(_ctx_line(_eid()))])


def test_good_events_land_once_the_registry_recovers(rig: Rig) -> None:
    """The same batch retried after an outage lands every good event, no bad rows."""
    ids = [_eid(), _eid()]
    batch = [message(_ctx_line(i), n) for n, i in enumerate(ids)]
    rig.registry.failing = True
    with pytest.raises(RegistryUnavailable):
        rig.processor.process(batch)
    rig.registry.failing = False

    rig.processor.process(batch)

    assert (ids, []) == (rig.sink.insert_ids, rig.bad_rows.messages)


def test_outcome_counts_every_route(rig: Rig) -> None:
    """A mixed batch counts good, bad and failed, and they add up to the events in."""
    batch = [
        message(_ctx_line(_eid()), 0),
        message(_ctx_line(_eid()), 1),
        message("bad", 2),
        message(_click_line(_eid()), 3),
    ]

    outcome = rig.processor.process(batch)

    counts = (outcome.events_in, outcome.good, outcome.bad, outcome.failed)
    assert (counts, outcome.types_published) == ((4, 2, 1, 1), 1)


def test_latencies_are_measured_for_landed_rows(rig: Rig) -> None:
    """Publish → insert latency is one second per landed row with the fixed clock."""
    outcome = rig.processor.process([message(_ctx_line(_eid()), n) for n in range(2)])

    assert outcome.publish_latency_s == (1.0, 1.0)


def test_sink_returning_a_foreign_failure_breaks_the_invariant() -> None:
    """A sink that reports more failures than rows trips the accounting check."""

    class Doubling(InMemoryRowSink):
        def insert(self, rows: object) -> list[InsertFailure]:
            row = Row("x", {})
            return [
                InsertFailure(row, InsertReason.INVALID, "no"),
                InsertFailure(row, InsertReason.INVALID, "no"),
            ]

    rig = make_rig([column_field(CTX, ShredProperty.CONTEXTS)], sink=Doubling())

    with pytest.raises(AccountingError):
        rig.processor.process([message(_ctx_line(_eid()))])


def test_outcomes_merge_by_adding_counts() -> None:
    """Merging two outcomes adds their counts and joins their per-code tallies."""
    one = BatchOutcome(3, 2, 1, 0, bad_by_code={"a": 1})
    two = BatchOutcome(2, 1, 0, 1, failed_by_reason={"invalid": 1}, bad_by_code={"a": 0})

    merged = one.merge(two)

    assert (
        (merged.events_in, merged.good, merged.bad, merged.failed),
        merged.bad_by_code,
    ) == ((5, 3, 1, 1), {"a": 1})


# process_in_chunks: a partition in pipelined chunks, only the undone handed back.

PUBLISHED = datetime(2024, 5, 1, 10, 0, 4, tzinfo=UTC)
SUBSCRIPTION = "projects/p/subscriptions/in"


def _micros(moment: datetime) -> int:
    return (moment - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)


def _pulled(ack_id: str, message_id: str, data: bytes) -> PulledMessage:
    return PulledMessage(ack_id, SUBSCRIPTION, message_id, _micros(PUBLISHED), data)


def _rows(count: int) -> list[PulledMessage]:
    return [
        _pulled(
            f"ack-{n}",
            f"m-{n}",
            with_entities(contexts=[(CTX.to_uri(), {"a": n})], event_id=str(uuid.uuid4())).encode(),
        )
        for n in range(count)
    ]


class FailingSink(InMemoryRowSink):
    """Fails the insert calls numbered in ``failing`` (1-based) with a TransientError."""

    def __init__(self, table: InMemoryTableSchemaStore, failing: set[int]) -> None:
        super().__init__(table)
        self.writes = 0
        self.failing = failing

    def insert(self, rows: Sequence[Row]) -> list[InsertFailure]:
        self.writes += 1
        if self.writes in self.failing:
            raise TransientError("insertAll: 503 backend error")
        return super().insert(rows)


class PrepareFailsAt:
    """A BatchProcessor whose ``prepare`` call number ``at`` raises ``error``; records threads."""

    def __init__(self, inner: BatchProcessor, at: int, error: Exception) -> None:
        self.inner, self.at, self.error = inner, at, error
        self.calls = 0
        self.deliver_threads: set[str] = set()

    def prepare(self, messages: Sequence[InboundMessage]) -> PreparedBatch:
        self.calls += 1
        if self.calls == self.at:
            raise self.error
        return self.inner.prepare(messages)

    def deliver(self, prepared: PreparedBatch) -> BatchOutcome:
        self.deliver_threads.add(threading.current_thread().name)
        return self.inner.deliver(prepared)


def _ctx_rig(sink_failing: set[int] | None = None) -> Any:
    rig = make_rig([column_field(CTX, ShredProperty.CONTEXTS)])
    if sink_failing is not None:
        rig = make_rig(
            [column_field(CTX, ShredProperty.CONTEXTS)],
            sink=FailingSink(InMemoryTableSchemaStore(rig.table.fields()), sink_failing),
        )
    return rig


def test_every_chunk_lands_in_its_own_insert() -> None:
    """1,200 rows in chunks of 500 make three inserts, one outcome, nothing handed back."""
    rig = _ctx_rig()
    rows = _rows(1200)

    report, handed_back = process_in_chunks(rig.processor, rows, 500)

    outcome = (report.outcome.events_in, report.outcome.good, report.transient_error, handed_back)
    assert (outcome, len(rig.sink.rows)) == ((1200, 1200, None, []), 1200)


def test_a_failed_write_hands_back_that_chunk_and_the_rest() -> None:
    """The second insert failing: chunk 1 stays written, chunks 2 and 3 are handed back."""
    rig = _ctx_rig(sink_failing={2})
    rows = _rows(1200)

    report, handed_back = process_in_chunks(rig.processor, rows, 500)

    assert (report.outcome.good, handed_back, report.transient_error) == (
        500,
        [row.ack_id for row in rows[500:]],
        "TransientError: insertAll: 503 backend error",
    )


def test_a_failed_prepare_keeps_the_chunk_being_written() -> None:
    """The registry failing at chunk 3: chunks 1 and 2 are written, only chunk 3 is handed back."""
    rig = _ctx_rig()
    flaky = PrepareFailsAt(rig.processor, 3, RegistryUnavailable("acme: 503"))
    rows = _rows(1200)

    report, handed_back = process_in_chunks(flaky, rows, 500)

    assert (report.outcome.good, len(rig.sink.rows), handed_back) == (
        1000,
        1000,
        [row.ack_id for row in rows[1000:]],
    )


def test_writes_run_in_their_own_thread() -> None:
    """``deliver`` runs on the pipeline's writer thread, so the next chunk's transform overlaps it."""
    rig = _ctx_rig()
    flaky = PrepareFailsAt(rig.processor, 0, RuntimeError("never raised"))

    process_in_chunks(flaky, _rows(1000), 500)

    assert [name.startswith("plowline-deliver") for name in flaky.deliver_threads] == [True]


def test_a_bug_while_preparing_propagates_after_the_write_in_flight() -> None:
    """A non-transient error fails the task, but only once the chunk being written is done."""
    rig = _ctx_rig()
    flaky = PrepareFailsAt(rig.processor, 2, KeyError("bug"))

    with pytest.raises(KeyError):
        process_in_chunks(flaky, _rows(1000), 500)

    assert len(rig.sink.rows) == 500


def test_a_registry_outage_report_names_the_registry_and_since_when() -> None:
    """A partition held back by a failing registry reports which one, since when, and why."""
    rig = _ctx_rig()
    rig.registry.failing = True
    report, handed_back = process_in_chunks(rig.processor, _rows(10), 500)
    expected = ([("acme", NOW, "acme is failing (test double)")], 10)
    actual = (
        [(o.repository, o.since, o.last_error) for o in report.registry_outages],
        len(handed_back),
    )
    assert expected == actual


def _mixed_rows() -> list[Any]:
    """Two good rows, one needing a column the table lacks (a failed insert), one bad line."""
    lines = [_ctx_line(_eid()), _ctx_line(_eid()), _click_line(_eid()), "not\ta\tline"]
    return [
        _pulled(f"x-ack-{n}", f"x-{n}", line)
        for n, line in enumerate(line.encode() for line in lines)
    ]


def test_a_failed_insert_publish_hands_back_only_what_is_not_durable() -> None:
    """failedInserts failing after the insert: the landed rows are acked, not inserted again."""
    rig = _ctx_rig()
    rig.failed_inserts.fail_with = TransientError("failedInserts: 503")
    rows = _mixed_rows()

    report, handed_back = process_in_chunks(rig.processor, rows, 500)
    rig.failed_inserts.fail_with = None
    retried, again = process_in_chunks(rig.processor, [r for r in rows if r.ack_id in handed_back])

    assert (handed_back, report.outcome.good, report.outcome.events_in, again) == (
        ["x-ack-2", "x-ack-3"],
        2,
        2,
        [],
    )
    assert (len(rig.sink.insert_ids), len(set(rig.sink.insert_ids))) == (2, 2)
    assert (retried.outcome.failed, retried.outcome.bad) == (1, 1)


def test_a_failed_bad_row_publish_hands_back_only_the_bad_lines() -> None:
    """badRows failing after the insert: good rows and the published failed insert are acked."""
    rig = _ctx_rig()
    rig.bad_rows.fail_with = TransientError("badRows: 503")

    report, handed_back = process_in_chunks(rig.processor, _mixed_rows(), 500)

    outcome = report.outcome
    assert (handed_back, outcome.events_in, outcome.good, outcome.failed, outcome.bad) == (
        ["x-ack-3"],
        3,
        2,
        1,
        0,
    )
    assert str(report.transient_error).startswith("PartlyDelivered: badRows: 503")


def test_a_publish_failing_in_a_later_chunk_hands_back_the_chunks_after_it() -> None:
    """A chunk handed back in part: the chunks not yet written come back whole."""
    rig = _ctx_rig()
    rig.bad_rows.fail_with = TransientError("badRows: 503")
    rows = _mixed_rows() + _rows(3)

    _, handed_back = process_in_chunks(rig.processor, rows, 4)

    assert handed_back == ["x-ack-3"] + [row.ack_id for row in rows[4:]]


def _worker_config(load: dict[str, Any]) -> WorkerConfig:
    document = bigquery_config(
        name="chunks",
        project="p",
        dataset="d",
        input="input-sub",
        types_subscription="types-sub",
        bad_rows="bad",
        failed_inserts="failed",
        load=load,
    )
    config = BigQueryConfig.parse(document)
    return WorkerConfig(config, "{}", ".", ColumnMode.FULL, "0.1.0")


@pytest.mark.parametrize(
    ("load", "one_insert"),
    [
        pytest.param({"mode": "FILE_LOADS", "frequency": 100}, True, id="file-loads-one-job"),
        pytest.param({"mode": "STREAMING_INSERTS", "retry": False}, False, id="insert-all"),
        pytest.param({"mode": "STORAGE_WRITE_API", "stream": "default"}, False, id="write-api"),
    ],
)
def test_a_round_of_compressed_batches_is_one_load_job_in_file_loads(
    load: dict[str, Any], one_insert: bool
) -> None:
    """Issue 37, finding 4: 3 compressed batches of 1,000 records are one insert (one load
    job) in FILE_LOADS, counted in records and bytes; the other modes write in chunks."""
    rig = make_rig([])
    rows = [
        _pulled(f"ack-{n}", f"m-{n}", _gzip_batch([_ctx_line(_eid()) for _ in range(1000)]))
        for n in range(3)
    ]
    size, decompression = chunking_for(_worker_config(load), len(rows))
    calls: list[int] = []
    deliver = rig.processor.deliver

    def counting(prepared: PreparedBatch) -> BatchOutcome:
        calls.append(len(prepared.messages))
        return deliver(prepared)

    rig.processor.deliver = counting  # type: ignore[method-assign]
    report, handed_back = process_in_chunks(rig.processor, rows, size, decompression)
    assert (one_insert, 3000, []) == (len(calls) == 1, report.outcome.events_in, handed_back)


def _gzip_batch(lines: list[str]) -> bytes:
    from plowline_core.event.compressed import Compression, write_batch

    return write_batch([line.encode() for line in lines], Compression.GZIP)


def test_a_size_violation_of_a_failed_insert_is_handed_back_when_bad_rows_fail() -> None:
    """A refused row too big for failedInserts is a bad row: handed back when badRows fails."""

    def refuse(row: Row) -> InsertFailure:
        return InsertFailure(row, InsertReason.INVALID, "bad value")

    rig = make_rig(
        [column_field(CTX, ShredProperty.CONTEXTS)],
        limits=Limits(max_failed_insert_bytes=6_000),
        sink=InMemoryRowSink(reject=refuse),
    )
    rig.bad_rows.fail_with = TransientError("badRows: 503")
    small, big = _eid(), _eid()
    lines = [_ctx_line(small), enriched_line(event_id=big, page_title="t" * 6_000)]
    rows = [
        _pulled(f"ack-{n}", f"m-{n}", line)
        for n, line in enumerate(line.encode() for line in lines)
    ]

    report, handed_back = process_in_chunks(rig.processor, rows, 500)

    outcome = report.outcome
    assert (handed_back, rig.failed_event_ids(), outcome.events_in, outcome.failed) == (
        ["ack-1"],
        [small],
        1,
        1,
    )


def test_latencies_are_the_landed_rows_only(rig: Rig) -> None:
    """A row the table refused (a column it lacks) has no latency; the landed row has both."""
    landed = with_entities(
        contexts=[(CTX.to_uri(), {"a": 1})],
        event_id=_eid(),
        collector_tstamp="2024-05-01 10:00:03.250",
    )
    refused = with_entities(
        unstruct_event=(CLICK.to_uri(), {"x": "y"}),
        event_id=_eid(),
        collector_tstamp="2024-05-01 10:00:01.000",
    )

    outcome = rig.processor.process([message(landed, 0), message(refused, 1)])

    latencies = (outcome.collector_latency_s, outcome.publish_latency_s, outcome.failed)
    expected = ((1.75,), (1.0,), 1)
    assert expected == latencies
