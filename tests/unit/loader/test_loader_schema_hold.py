"""exitOnMissingIgluSchema: events needing a missing schema are held for a bound, then failed."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from plowline_cloud.pubsub.pulled import PulledMessage
from plowline_core.badrows import Processor
from plowline_core.errors import ConfigError
from plowline_core.event.compressed import Compression, write_batch
from plowline_core.event.fields import ATOMIC_COLUMNS
from plowline_core.iglu.config import EmbeddedConnection, RepositoryRef
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
from plowline_loader.batch.processor import BatchProcessor, Destinations
from plowline_loader.batch.schema_hold import SchemaHold
from plowline_loader.health import Readiness
from plowline_loader.partition import process_in_chunks
from plowline_loader.settings import load_settings

pytestmark = pytest.mark.unit

NOW = datetime(2024, 5, 1, 10, 0, 5, tzinfo=UTC)
MISSING = "iglu:com.acme/missing/jsonschema/1-0-0"
HOUR = 3600.0


class Rig:
    """A BatchProcessor over fakes whose registry has no schema at all."""

    def __init__(self, hold: SchemaHold) -> None:
        clock = FixedClock(NOW)
        table = InMemoryTableSchemaStore(list(ATOMIC_COLUMNS))
        self.sink = InMemoryRowSink(table)
        self.bad_rows = InMemoryPublisher()
        ref = RepositoryRef("acme", 0, (), EmbeddedConnection("acme"))
        builder = RowBuilder(
            Resolver([(ref, InMemoryRegistry("acme", {}))], clock), ColumnMode.FULL
        )
        destinations = Destinations(
            table, self.sink, InMemoryPublisher(), self.bad_rows, InMemoryPublisher()
        )
        self.processor = BatchProcessor(
            builder,
            destinations,
            TypeTracker(ColumnMode.FULL),
            clock,
            Processor("plowline-loader", "0.1.0"),
            hold=hold,
        )

    def bad_kinds(self) -> list[str]:
        """Return the schema name of each published failed event."""
        return [json.loads(data)["schema"].split("/")[1] for data in self.bad_rows.messages]


def _us(moment: datetime) -> int:
    return (moment - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)


def _needing_missing() -> bytes:
    return with_entities(contexts=[(MISSING, {"a": 1})], event_id=str(uuid.uuid4())).encode()


def _plain() -> bytes:
    return with_entities(event_id=str(uuid.uuid4())).encode()


def _message(data: bytes, name: str, age_s: float | None = 60.0) -> InboundMessage:
    published = None if age_s is None else _us(NOW - timedelta(seconds=age_s))
    return InboundMessage(data, name, published)


def test_an_event_needing_a_missing_schema_is_held_and_the_rest_loads() -> None:
    """Held: not a row, not a failed event, named with its schema; the other event lands."""
    rig = Rig(SchemaHold(True, HOUR))

    outcome = rig.processor.process(
        [_message(_needing_missing(), "held"), _message(_plain(), "good")]
    )

    expected = (1, 1, frozenset({"held"}), frozenset({MISSING}), [])
    assert expected == (
        outcome.events_in,
        outcome.good,
        outcome.held_ids,
        outcome.held_schemas,
        rig.bad_kinds(),
    )


def test_past_the_bound_it_is_a_loader_iglu_error() -> None:
    """Published longer ago than the bound: the event fails as a loader_iglu_error."""
    rig = Rig(SchemaHold(True, HOUR))

    outcome = rig.processor.process([_message(_needing_missing(), "old", age_s=HOUR + 1)])

    assert (outcome.held_ids, rig.bad_kinds()) == (frozenset(), ["loader_iglu_error"])


@pytest.mark.parametrize(
    ("hold", "age_s"),
    [
        pytest.param(SchemaHold(False, HOUR), 60.0, id="exit-on-missing-false"),
        pytest.param(SchemaHold(True, HOUR), None, id="line-from-a-file"),
    ],
)
def test_without_holding_it_fails_at_once(hold: SchemaHold, age_s: float | None) -> None:
    """``false`` (or a line with no publish time) makes it a loader_iglu_error at once."""
    rig = Rig(hold)

    outcome = rig.processor.process([_message(_needing_missing(), "m", age_s=age_s)])

    assert (outcome.held_ids, rig.bad_kinds()) == (frozenset(), ["loader_iglu_error"])


def test_a_held_record_parks_its_delivery_with_its_siblings_durable() -> None:
    """A batch with one held record: its delivery is parked (its written sibling named
    durable, so never written again), neither nacked nor handed back."""
    rig = Rig(SchemaHold(True, HOUR))
    published = _us(NOW - timedelta(seconds=60))
    batch = write_batch([_plain(), _needing_missing()], Compression.GZIP)
    rows = [
        PulledMessage("ack-batch", "projects/p/subscriptions/s", "b", published, batch),
        PulledMessage("ack-plain", "projects/p/subscriptions/s", "p", published, _plain()),
    ]

    report, handed_back = process_in_chunks(rig.processor, rows)

    parked = [(p.ack_id, p.durable) for p in report.parked]
    assert ([("ack-batch", frozenset({0}))], [], 2) == (parked, handed_back, report.outcome.good)


def test_readyz_names_the_missing_schema_and_stays_ready() -> None:
    """/readyz lists the schema the held events wait for; waiting is not unreadiness."""
    readiness = Readiness()
    readiness.started()

    readiness.holding(frozenset({MISSING}), 3)

    details: dict[str, Any] = readiness.details()
    assert (readiness(), details["missingSchemas"], details["heldEvents"]) == (True, [MISSING], 3)


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        pytest.param({"column_mode": "major"}, SchemaHold(True, 21600.0), id="2x-default-true"),
        pytest.param({}, SchemaHold(False, 21600.0), id="1x-default-false"),
        pytest.param(
            {"column_mode": "major", "exit_on_missing_iglu_schema": "false"},
            SchemaHold(False, 21600.0),
            id="false-given",
        ),
        pytest.param(
            {"exit_on_missing_iglu_schema": "true", "missing_schema_bound": "600"},
            SchemaHold(True, 600.0),
            id="true-and-bound-given",
        ),
    ],
)
def test_the_hold_follows_the_config_and_flags(
    values: dict[str, str], expected: SchemaHold
) -> None:
    """2.x's default (true) for a 2.x config; 1.x configs keep failing at once; flags override."""
    assert expected == load_settings({"config": "c", "resolver": "r", **values}).schema_hold()


def test_a_bound_past_pub_sub_retention_is_refused() -> None:
    """A bound over 6 days (Pub/Sub keeps messages 7 days by default) is a config error."""
    with pytest.raises(ConfigError, match="--missing-schema-bound"):
        load_settings({"config": "c", "resolver": "r", "missing_schema_bound": 7 * 24 * HOUR})
