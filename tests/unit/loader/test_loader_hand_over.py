"""Exactly-once hand-over: the loader marks a failed insert's id as the repeater's, after the publish."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime

import pytest
from plowline_core.badrows import Processor
from plowline_core.errors import PermanentError, PlowlineError, TransientError
from plowline_core.event.fields import ATOMIC_COLUMNS
from plowline_core.iglu.config import EmbeddedConnection, RepositoryRef
from plowline_core.iglu.key import SchemaKey
from plowline_core.iglu.resolver import Resolver
from plowline_core.schema.entity import ColumnMode
from plowline_core.testing.clock import FixedClock
from plowline_core.testing.registry import InMemoryRegistry
from plowline_core.testing.sinks import InMemoryPublisher, InMemoryRowSink
from plowline_core.testing.table import InMemoryTableSchemaStore
from plowline_core.testing.tsv import with_entities
from plowline_core.transform.row import RowBuilder
from plowline_loader.batch.announcements import TypeTracker
from plowline_loader.batch.message import InboundMessage
from plowline_loader.batch.outcome import BatchOutcome, PartlyDelivered
from plowline_loader.batch.processor import BatchProcessor, Destinations
from structlog.testing import capture_logs

CLICK = SchemaKey.parse("iglu:com.acme/click/jsonschema/1-0-0")
NOW = datetime(2024, 5, 1, 10, 0, 5, tzinfo=UTC)


class RecordingHandOver:
    """A ``HandOverLog`` that records each call, or raises ``fail_with``."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.fail_with: PlowlineError | None = None

    def hand_over(self, insert_ids: Sequence[str]) -> None:
        """Record the ids (or fail)."""
        if self.fail_with is not None:
            raise self.fail_with
        self.calls.append(list(insert_ids))


def _processor(
    failed_inserts: InMemoryPublisher, hand_over: RecordingHandOver | None
) -> BatchProcessor:
    registry = InMemoryRegistry("acme", {CLICK: {"type": "object"}})
    ref = RepositoryRef("acme", 0, (), EmbeddedConnection("acme"))
    clock = FixedClock(NOW)
    table = InMemoryTableSchemaStore(list(ATOMIC_COLUMNS))  # no click column: a failed insert
    destinations = Destinations(
        table,
        InMemoryRowSink(table),
        InMemoryPublisher(),
        InMemoryPublisher(),
        failed_inserts,
        hand_over,
    )
    builder = RowBuilder(Resolver([(ref, registry)], clock), ColumnMode.FULL)
    return BatchProcessor(
        builder, destinations, TypeTracker(ColumnMode.FULL), clock, Processor("t", "0")
    )


def _messages() -> tuple[list[InboundMessage], list[str]]:
    """One good event and two that need the missing click column; return them and those two ids."""
    good = with_entities(event_id=str(uuid.uuid4()))
    ids = [str(uuid.uuid4()) for _ in range(2)]
    clicks = [with_entities(unstruct_event=(CLICK.to_uri(), {"x": "y"}), event_id=i) for i in ids]
    lines = [good, *clicks]
    return [InboundMessage(line.encode(), f"m-{n}") for n, line in enumerate(lines)], ids


def test_failed_inserts_are_handed_over_after_their_publish() -> None:
    """The ids of the published failed inserts are marked, once, with nothing else."""
    failed, log = InMemoryPublisher(), RecordingHandOver()
    messages, ids = _messages()

    outcome = _processor(failed, log).process(messages)

    assert (log.calls, outcome.failed, len(failed.messages)) == ([ids], 2, 2)


def test_nothing_is_handed_over_when_the_failed_insert_publish_fails() -> None:
    """A failed publish leaves no mark: the repeater never got the ids, the loader keeps them."""
    failed, log = InMemoryPublisher(), RecordingHandOver()
    failed.fail_with = TransientError("failedInserts: 503")
    messages, _ = _messages()

    with pytest.raises(PartlyDelivered) as raised:
        _processor(failed, log).process(messages)

    assert (log.calls, raised.value.not_durable) == ([], frozenset({"m-1", "m-2"}))


@pytest.mark.parametrize("error", [TransientError("ledger: 503"), PermanentError("ledger: 403")])
def test_a_failing_mark_still_acks_the_published_failed_inserts(error: PlowlineError) -> None:
    """A mark that fails does not hand back failed inserts already published (no double publish)."""
    failed, log = InMemoryPublisher(), RecordingHandOver()
    log.fail_with = error
    messages, _ = _messages()

    with capture_logs() as logs:
        outcome = _processor(failed, log).process(messages)

    assert (outcome.events_in, outcome.good, outcome.failed, len(failed.messages)) == (3, 1, 2, 2)
    warned = [e for e in logs if e["event"].endswith("without a ledger mark")]
    assert [(e["log_level"], e["events"], e["error"]) for e in warned] == [
        ("warning", 2, str(error))
    ]


def test_no_hand_over_log_outside_exactly_once_mode() -> None:
    """Without a hand-over log (the other modes) failed inserts are routed as before."""
    failed = InMemoryPublisher()
    messages, _ = _messages()

    outcome = _processor(failed, None).process(messages)

    assert isinstance(outcome, BatchOutcome)
    assert (outcome.good, outcome.failed, len(failed.messages)) == (1, 2, 2)
