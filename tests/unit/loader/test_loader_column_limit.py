"""At BigQuery's column limit the loader stays healthy and asks again after tooManyColumns.delay.

The mutator cannot add a column to a table of 10,000 leaf fields (``column_limit``); the
loader keeps loading: rows that need the column are failed inserts, and the type is
announced again once ``retries.tooManyColumns.delay`` (2.x) has passed, so the mutator
tries again, as loader 2.x retries its alter-table after that delay.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from plowline_core.badrows import Processor
from plowline_core.event.fields import ATOMIC_COLUMNS
from plowline_core.iglu.config import EmbeddedConnection, RepositoryRef
from plowline_core.iglu.key import SchemaKey
from plowline_core.iglu.resolver import Resolver
from plowline_core.messages import decode_types
from plowline_core.schema.entity import ColumnMode
from plowline_core.testing.clock import FixedClock
from plowline_core.testing.registry import InMemoryRegistry
from plowline_core.testing.sinks import InMemoryPublisher, InMemoryRowSink
from plowline_core.testing.table import InMemoryTableSchemaStore
from plowline_core.testing.tsv import with_entities
from plowline_core.transform.row import RowBuilder
from plowline_loader.batch.announcements import TypeTracker
from plowline_loader.batch.message import InboundMessage
from plowline_loader.batch.processor import BatchProcessor, Destinations
from plowline_loader.bootstrap import worker_config
from plowline_loader.settings import load_settings

DATA = Path(__file__).resolve().parents[2] / "data" / "v2config"
EXAMPLES = Path(__file__).resolve().parents[3] / "libs/devstack/src/plowline_devstack/examples"
CLICK = SchemaKey.parse("iglu:com.acme/click/jsonschema/1-0-0")
DELAY = 120.0  # tests/data/v2config/full.hocon: retries.tooManyColumns.delay


def test_the_2x_delay_reaches_the_executors() -> None:
    """retries.tooManyColumns.delay is how long an executor waits before announcing again."""
    settings = load_settings(
        {"config": str(DATA / "full.hocon"), "resolver": str(EXAMPLES / "resolver.json")}
    )

    assert worker_config(settings, "0").types_republish_s == DELAY


class Loader:
    """A BatchProcessor on a table that cannot grow (at the column limit)."""

    def __init__(self) -> None:
        registry = InMemoryRegistry(
            "acme", {CLICK: {"type": "object", "properties": {"x": {"type": "string"}}}}
        )
        ref = RepositoryRef("acme", 0, (), EmbeddedConnection("acme"))
        self.clock = FixedClock(datetime(2025, 3, 1, 12, 0, tzinfo=UTC))
        table = InMemoryTableSchemaStore(list(ATOMIC_COLUMNS))
        self.types, self.failed = InMemoryPublisher(), InMemoryPublisher()
        self.processor = BatchProcessor(
            RowBuilder(Resolver([(ref, registry)], self.clock), ColumnMode.MAJOR),
            Destinations(
                table, InMemoryRowSink(table), self.types, InMemoryPublisher(), self.failed
            ),
            TypeTracker(ColumnMode.MAJOR, DELAY),
            self.clock,
            Processor("plowline-loader", "0"),
        )
        self.sent = 0

    def batch(self) -> int:
        """Process one event needing the missing column; return the types messages so far."""
        self.sent += 1
        line = with_entities(
            unstruct_event=(CLICK.to_uri(), {"x": "y"}),
            event_id=f"00000000-0000-4000-8000-{self.sent:012d}",
        )
        self.processor.process([InboundMessage(line.encode(), f"m-{self.sent}")])
        return len([decode_types(data) for data in self.types.messages])


@pytest.mark.parametrize(
    ("waited", "announcements"),
    [
        pytest.param(0.0, 1, id="at-once-no-repeat"),
        pytest.param(DELAY - 1, 1, id="before-the-delay"),
        pytest.param(DELAY, 2, id="after-the-delay"),
    ],
)
def test_a_type_without_column_is_announced_again_after_the_delay(
    waited: float, announcements: int
) -> None:
    """The type is announced once, then again only when the delay has passed."""
    loader = Loader()
    loader.batch()

    loader.clock.advance(waited)

    assert loader.batch() == announcements


def test_the_loader_keeps_loading_at_the_column_limit() -> None:
    """Batch after batch returns normally; every event needing the column is a failed insert."""
    loader = Loader()

    for _ in range(3):
        loader.batch()
        loader.clock.advance(DELAY / 2)

    failed = [json.loads(data)["event_id"][-1] for data in loader.failed.messages]
    assert failed == ["1", "2", "3"]
