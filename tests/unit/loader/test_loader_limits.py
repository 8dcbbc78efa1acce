"""Size limits: every outcome fits where it is published, or becomes a precise size violation."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

import pytest
from plowline_core.badrows import Processor
from plowline_core.errors import ConfigError
from plowline_core.event.fields import ATOMIC_COLUMNS
from plowline_core.iglu.config import EmbeddedConnection, RepositoryRef
from plowline_core.iglu.resolver import Resolver
from plowline_core.ports import InsertFailure, InsertReason, Row
from plowline_core.schema.entity import ColumnMode
from plowline_core.testing.clock import FixedClock
from plowline_core.testing.registry import InMemoryRegistry
from plowline_core.testing.sinks import InMemoryPublisher, InMemoryRowSink
from plowline_core.testing.table import InMemoryTableSchemaStore
from plowline_core.testing.tsv import enriched_line
from plowline_core.transform.row import RowBuilder
from plowline_loader.batch.announcements import TypeTracker
from plowline_loader.batch.message import InboundMessage
from plowline_loader.batch.outcome import BatchOutcome
from plowline_loader.batch.processor import BatchProcessor, Destinations
from plowline_loader.batch.sizes import PUBSUB_MESSAGE_BYTES, Limits
from plowline_loader.settings import load_settings

NOW = datetime(2024, 5, 1, 10, 0, 5, tzinfo=UTC)
SIZE_VIOLATION = "iglu:com.snowplowanalytics.snowplow.badrows/size_violation/jsonschema/1-0-0"
_REPOSITORY = RepositoryRef("empty", 0, (), EmbeddedConnection("empty"))
EVENT_ID = "c6ef3124-b53a-4b13-a233-0088f79dcbcb"


def _refuse(row: Row) -> InsertFailure:
    return InsertFailure(row, InsertReason.INVALID, "invalid value", "page_title")


class _Rig:
    """A BatchProcessor over fakes, with an empty Iglu resolver."""

    def __init__(self, limits: Limits, *, refuse_all: bool = False) -> None:
        self.clock = clock = FixedClock(NOW)
        table = InMemoryTableSchemaStore(list(ATOMIC_COLUMNS))
        self.sink = InMemoryRowSink(table, reject=_refuse if refuse_all else None)
        self.bad_rows, self.failed_inserts = InMemoryPublisher(), InMemoryPublisher()
        self.processor = BatchProcessor(
            RowBuilder(
                Resolver([(_REPOSITORY, InMemoryRegistry("empty"))], clock), ColumnMode.FULL
            ),
            Destinations(table, self.sink, InMemoryPublisher(), self.bad_rows, self.failed_inserts),
            TypeTracker(ColumnMode.FULL),
            clock,
            Processor("plowline-loader", "0.1.0"),
            limits,
        )

    def process(self, data: bytes, published: datetime = NOW) -> BatchOutcome:
        epoch = datetime(1970, 1, 1, tzinfo=UTC)
        published_us = (published - epoch) // timedelta(microseconds=1)
        return self.processor.process([InboundMessage(data, "m-1", published_us)])

    def bad_row(self) -> dict[str, object]:
        (only,) = self.bad_rows.messages
        document: dict[str, object] = json.loads(only)
        return document


def test_failed_insert_too_big_to_publish_becomes_a_size_violation() -> None:
    """A refused row whose failed insert exceeds the Pub/Sub budget is a size_violation bad row."""
    rig = _Rig(Limits(max_failed_insert_bytes=2_000), refuse_all=True)
    line = enriched_line(event_id=EVENT_ID, page_title="x" * 3_000).encode()

    outcome = rig.process(line)

    bad = rig.bad_row()
    expectation = str(bad["data"]["failure"]["expectation"])  # type: ignore[index]
    expected = ((0, 1, 0), {"size.row": 1}, [], SIZE_VIOLATION)
    assert expected == (
        (outcome.good, outcome.bad, outcome.failed),
        outcome.bad_by_code,
        rig.failed_inserts.messages,
        bad["schema"],
    )
    assert re.fullmatch(
        r"failed insert of \d+ bytes exceeds the 2000-byte Pub/Sub budget "
        r"\(the table said invalid: invalid value\)",
        expectation,
    )


def test_failed_insert_within_the_budget_is_published_as_is() -> None:
    """A refused row whose failed insert fits the budget goes to failedInserts unchanged."""
    rig = _Rig(Limits(max_failed_insert_bytes=20_000), refuse_all=True)

    outcome = rig.process(enriched_line(event_id=EVENT_ID, page_title="x" * 3_000).encode())

    expected = ((0, 0, 1), 1)
    assert expected == (
        (outcome.good, outcome.bad, outcome.failed),
        len(rig.failed_inserts.messages),
    )


def test_bad_row_replaced_by_a_size_violation_is_counted_as_one() -> None:
    """A bad row over the budget is published as a size_violation and counted under size.row."""
    rig = _Rig(Limits(max_bad_row_bytes=1_000))

    outcome = rig.process(b"x" * 5_000)  # not TSV, and its bad row would hold 5,000 bytes

    expected = ({"size.row": 1}, SIZE_VIOLATION)
    assert expected == (outcome.bad_by_code, rig.bad_row()["schema"])


@pytest.mark.parametrize(
    "value",
    [pytest.param(PUBSUB_MESSAGE_BYTES + 1, id="over-budget"), pytest.param(20_000_000, id="20MB")],
)
def test_bad_row_budget_over_pubsub_limit_is_refused(value: int) -> None:
    """--max-bad-row-bytes above what one Pub/Sub message can hold is a config error naming it."""
    with pytest.raises(ConfigError) as caught:
        load_settings({"config": "c.json", "resolver": "r.json", "max_bad_row_bytes": value})

    assert "--max-bad-row-bytes (PLOWLINE_LOADER_MAX_BAD_ROW_BYTES)" in str(caught.value)


@pytest.mark.parametrize(
    ("limits", "refuse_all", "data"),
    [
        pytest.param(Limits(max_bad_row_bytes=1_000), False, b"x" * 5_000, id="bad-row"),
        pytest.param(
            Limits(max_row_bytes=2_000),
            False,
            enriched_line(event_id=EVENT_ID, page_title="x" * 3_000).encode(),
            id="row",
        ),
        pytest.param(
            Limits(max_failed_insert_bytes=2_000),
            True,
            enriched_line(event_id=EVENT_ID, page_title="x" * 3_000).encode(),
            id="failed-insert",
        ),
    ],
)
def test_size_violation_is_the_same_bytes_on_every_delivery(
    limits: Limits, refuse_all: bool, data: bytes
) -> None:
    """A message delivered twice, 90 s apart, yields one size violation stamped with its publish time."""
    published = datetime(2024, 5, 1, 9, 58, 0, 123_456, tzinfo=UTC)
    rig = _Rig(limits, refuse_all=refuse_all)
    rig.process(data, published)
    rig.clock.advance(90)
    rig.process(data, published)

    first, second = rig.bad_rows.messages
    stamp = json.loads(first)["data"]["failure"]["timestamp"]
    assert (first, stamp) == (second, "2024-05-01T09:58:00.123Z")
