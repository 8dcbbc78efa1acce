"""The Repeater holds failed inserts until they fit, inserts them, and dead-ends the rest."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import orjson
import pytest
from plowline_cloud.metrics import BatchHistogram, MetricsRegistry
from plowline_core.badrows import Processor
from plowline_core.config import RepeaterOptions
from plowline_core.errors import TransientError
from plowline_core.ports import InsertFailure, InsertReason, Row
from plowline_core.schema.field import Field, FieldType
from plowline_core.testing.clock import FixedClock
from plowline_core.testing.sinks import InMemoryBlobStore, InMemoryRowSink
from plowline_core.testing.table import InMemoryTableSchemaStore
from plowline_repeater.metrics import RepeaterMetrics
from plowline_repeater.repeater import Repeater

ETL = datetime(2026, 11, 22, 5, 0, tzinfo=UTC)
BASE = (Field("event_id", FieldType.STRING), Field("etl_tstamp", FieldType.TIMESTAMP))
NEW = Field("contexts_x_1", FieldType.STRING)


@dataclass
class FakeMessage:
    """A received message that records how it was settled."""

    data: bytes
    settled: str | None = None
    publish_time: datetime = ETL
    message_id: str = "m1"

    def ack(self) -> None:
        """Record an ack."""
        self.settled = "ack"

    def nack(self) -> None:
        """Record a nack."""
        self.settled = "nack"


def _message(
    event_id: str = "e1", etl: datetime = ETL, published: datetime = ETL, **extra: object
) -> FakeMessage:
    row = {"event_id": event_id, "etl_tstamp": etl.isoformat(), **extra}
    return FakeMessage(orjson.dumps(row), publish_time=published)


@dataclass
class World:
    """A repeater wired to in-memory ports."""

    repeater: Repeater
    table: InMemoryTableSchemaStore
    sink: InMemoryRowSink
    store: InMemoryBlobStore
    clock: FixedClock
    metrics: RepeaterMetrics


def _world(reject: InsertReason | None = None, buffer_size: int = 20) -> World:
    table = InMemoryTableSchemaStore(BASE)

    def refuse(row: Row) -> InsertFailure | None:
        return None if reject is None else InsertFailure(row, reject, "wrong type", "contexts_x_1")

    sink = InMemoryRowSink(table, reject=refuse)
    store = InMemoryBlobStore()
    clock = FixedClock(ETL)
    options = RepeaterOptions(backoff_period=60, buffer_size=buffer_size, window=30)
    metrics = RepeaterMetrics.create(MetricsRegistry("repeater-test"))
    repeater = Repeater(
        sink, table, store, clock, options, Processor("plowline-repeater", "0.1.0"), metrics
    )
    return World(repeater, table, sink, store, clock, metrics)


def _dead_rows(store: InMemoryBlobStore) -> list[dict[str, object]]:
    return [orjson.loads(line) for body in store.objects.values() for line in body.splitlines()]


def test_a_fitting_row_is_inserted_and_acked() -> None:
    """A row the table can take goes in with insertId = event_id, then its message is acked."""
    world = _world()
    message = _message()
    world.repeater.receive(message)
    world.repeater.step()
    expected = (["e1"], "ack")
    assert expected == (world.sink.insert_ids, message.settled)


def test_a_row_waits_unacked_for_its_column() -> None:
    """A row naming a missing column is neither inserted nor settled."""
    world = _world()
    message = _message(contexts_x_1="v")
    world.repeater.receive(message)
    world.repeater.step()
    expected: tuple[list[str], str | None, int] = ([], None, 1)
    assert expected == (world.sink.insert_ids, message.settled, world.repeater.waiting)


def test_a_row_goes_in_once_its_column_is_added() -> None:
    """Mutation lag: the row lands on the first step after the mutator added the column."""
    world = _world()
    message = _message(contexts_x_1="v")
    world.repeater.receive(message)
    world.repeater.step()
    world.table.add_fields([NEW])
    world.clock.advance(1)
    world.repeater.step()
    expected = (["e1"], "ack", 0)
    assert expected == (world.sink.insert_ids, message.settled, world.repeater.waiting)


def test_a_row_that_never_fits_is_dead_ended_after_the_backoff() -> None:
    """After the backoff the last refusal becomes a recovery bad row and the message is acked."""
    world = _world(buffer_size=1)
    message = _message(contexts_x_1="v")
    world.repeater.receive(message)
    world.repeater.step()
    world.clock.advance(61)
    world.repeater.step()
    world.repeater.step()
    [row] = _dead_rows(world.store)
    expected = ("ack", "unknown_field")
    assert expected == (message.settled, row["data"]["failure"]["error"]["reason"])  # type: ignore[index]


def test_an_event_enriched_years_ago_waits_for_its_column() -> None:
    """A 2013 event whose insert failed now gets the whole backoff: its column comes 5 s later."""
    world = _world()
    message = _message(etl=datetime(2013, 10, 7, 12, 0, tzinfo=UTC), contexts_x_1="v")
    world.repeater.receive(message)
    world.repeater.step()
    world.clock.advance(5)
    world.table.add_fields([NEW])
    world.repeater.step()
    expected = (["e1"], "ack", {})
    assert expected == (world.sink.insert_ids, message.settled, world.store.objects)


def test_a_redelivered_failure_keeps_its_first_seen_time() -> None:
    """The backoff runs from the publish time, so a redelivery 61 s later is dead-ended, not reset."""
    world = _world(buffer_size=1)
    world.clock.advance(61)
    message = _message(contexts_x_1="v")
    world.repeater.receive(message)
    world.repeater.step()
    world.repeater.step()
    [row] = _dead_rows(world.store)
    expected = ("ack", "unknown_field")
    assert expected == (message.settled, row["data"]["failure"]["error"]["reason"])  # type: ignore[index]


def test_an_invalid_row_is_not_retried_before_the_backoff() -> None:
    """A row BigQuery refused for its values waits for the backoff instead of looping."""
    world = _world(reject=InsertReason.INVALID)
    world.repeater.receive(_message())
    for _ in range(5):
        world.repeater.step()
    expected = 1
    assert expected == world.sink.calls


def test_a_message_that_is_not_a_row_is_dead_ended_as_parsing_error() -> None:
    """Garbage becomes a loader_recovery_error with a parsing failure."""
    world = _world(buffer_size=1)
    message = FakeMessage(b"garbage")
    world.repeater.receive(message)
    world.repeater.step()
    [row] = _dead_rows(world.store)
    expected = ("ack", "garbage")
    assert expected == (message.settled, row["data"]["payload"])  # type: ignore[index]


def test_dead_end_rows_wait_for_the_window() -> None:
    """A partial dead-end buffer is written only when its window passed; messages wait unacked."""
    world = _world(buffer_size=20)
    message = FakeMessage(b"garbage")
    world.repeater.receive(message)
    world.repeater.step()
    before = (len(world.store.objects), message.settled)
    world.clock.advance(30)
    world.repeater.step()
    expected = ((0, None), (1, "ack"))
    assert expected == (before, (len(world.store.objects), message.settled))


def test_a_failed_dead_end_write_nacks() -> None:
    """When the bucket refuses, dead-end messages are given back, not acked."""
    world = _world(buffer_size=1)
    world.store.fail_with = TransientError("bucket down")
    message = FakeMessage(b"garbage")
    world.repeater.receive(message)
    world.repeater.step()
    expected = "nack"
    assert expected == message.settled


def test_a_failing_table_keeps_rows_waiting() -> None:
    """A transient insert error leaves the row held for the next step."""
    world = _world()
    world.sink.fail_with = TransientError("bigquery down")
    message = _message()
    world.repeater.receive(message)
    world.repeater.step()
    expected = (None, 1)
    assert expected == (message.settled, world.repeater.waiting)


def test_close_writes_the_buffer_and_gives_waiting_rows_back() -> None:
    """Shutdown acks what it wrote and nacks what still waits."""
    world = _world()
    garbage, waiting = FakeMessage(b"garbage"), _message(contexts_x_1="v")
    world.repeater.receive(garbage)
    world.repeater.receive(waiting)
    world.repeater.step()
    world.repeater.close()
    expected = ("ack", "nack", 1)
    assert expected == (garbage.settled, waiting.settled, len(world.store.objects))


def test_messages_after_close_are_nacked() -> None:
    """Nothing is taken in once shutdown began."""
    world = _world()
    world.repeater.close()
    message = _message()
    world.repeater.receive(message)
    expected = "nack"
    assert expected == message.settled


def test_an_unreadable_table_leaves_the_repeater_running_and_not_ready() -> None:
    """When the schema read fails the step returns, rows stay held, and readiness is withdrawn."""
    world = _world()
    world.table.fail_with = TransientError("bigquery down past the retry deadline")
    message = _message()
    world.repeater.receive(message)
    world.repeater.step()
    expected = (False, None, 1)
    assert expected == (world.repeater.ready, message.settled, world.repeater.waiting)


def test_the_repeater_recovers_once_the_table_reads_again() -> None:
    """After the outage the next step reads the schema, inserts the held row, and is ready again."""
    world = _world()
    world.table.fail_with = TransientError("bigquery down past the retry deadline")
    message = _message()
    world.repeater.receive(message)
    world.repeater.step()
    world.table.fail_with = None
    world.repeater.step()
    expected = (True, "ack", ["e1"])
    assert expected == (world.repeater.ready, message.settled, world.sink.insert_ids)


def _latency_samples(histogram: BatchHistogram) -> dict[str, float]:
    [family] = histogram.collect()
    return {s.name.rsplit("_", 1)[-1]: s.value for s in family.samples if "le" not in s.labels}


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        pytest.param(
            {"collector_tstamp": "2026-11-22 04:58:30"}, {"count": 1, "sum": 90.0}, id="naive-utc"
        ),
        pytest.param(
            {"collector_tstamp": "2026-11-22T04:59:00+00:00"}, {"count": 1, "sum": 60.0}, id="aware"
        ),
        pytest.param({}, {"count": 0, "sum": 0.0}, id="none"),
        pytest.param({"collector_tstamp": "yesterday"}, {"count": 0, "sum": 0.0}, id="not-iso"),
    ],
)
def test_a_reinserted_row_counts_its_collector_to_row_latency(
    extra: dict[str, object], expected: dict[str, float]
) -> None:
    """Each re-inserted row adds collector_tstamp → re-insert to the histogram (none without one)."""
    world = _world()
    world.table.add_fields([Field("collector_tstamp", FieldType.STRING)])
    world.repeater.receive(_message(**extra))
    world.repeater.step()
    samples = _latency_samples(world.metrics.collector_latency)
    assert expected == {"count": samples["count"], "sum": samples["sum"]}


def test_a_reinserted_row_counts_its_wait_since_the_failed_insert_was_published() -> None:
    """The detour: from the failed insert's publish to its re-insert, once its column came."""
    world = _world()
    world.repeater.receive(_message(published=ETL, contexts_x_1="v"))
    world.repeater.step()
    world.clock.advance(42)
    world.table.add_fields([NEW])
    world.repeater.step()
    samples = _latency_samples(world.metrics.wait)
    expected = {"count": 1, "sum": 42.0}
    assert expected == {"count": samples["count"], "sum": samples["sum"]}
