"""A 2.x config's failed events: 2.x's shapes on the bad topic, each valid against Iglu Central."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft4Validator, FormatChecker
from plowline_core.badrows import Processor
from plowline_core.event.fields import ATOMIC_COLUMNS
from plowline_core.iglu.config import EmbeddedConnection, RepositoryRef
from plowline_core.iglu.key import SchemaKey
from plowline_core.iglu.resolver import Resolver
from plowline_core.ports import InsertFailure, InsertReason, Row
from plowline_core.schema.entity import ColumnMode
from plowline_core.testing.clock import FixedClock
from plowline_core.testing.registry import InMemoryRegistry
from plowline_core.testing.sinks import InMemoryPublisher, InMemoryRowSink
from plowline_core.testing.table import InMemoryTableSchemaStore
from plowline_core.testing.tsv import with_entities
from plowline_core.transform.row import RowBuilder
from plowline_loader.batch.announcements import TypeTracker
from plowline_loader.batch.failed_events import BAD_ROW_TOO_BIG, FailedEventStyle
from plowline_loader.batch.message import InboundMessage
from plowline_loader.batch.processor import BatchProcessor, Destinations
from plowline_loader.batch.sizes import Limits
from plowline_loader.bootstrap import failed_event_style

pytestmark = pytest.mark.unit

NOW = datetime(2024, 5, 1, 10, 0, 5, tzinfo=UTC)
BADROWS = "iglu:com.snowplowanalytics.snowplow.badrows"
UNKNOWN = "iglu:com.acme/unknown/jsonschema/1-0-0"  # the registry is empty


class Rig:
    """A BatchProcessor writing ``style``'s failed events, over fakes."""

    def __init__(
        self,
        style: FailedEventStyle,
        reject: Callable[[Row], InsertFailure | None] | None = None,
        limits: Limits | None = None,
    ) -> None:
        clock = FixedClock(NOW)
        table = InMemoryTableSchemaStore(list(ATOMIC_COLUMNS))
        self.sink = InMemoryRowSink(table, reject=reject)
        self.bad_rows, self.failed = InMemoryPublisher(), InMemoryPublisher()
        ref = RepositoryRef("acme", 0, (), EmbeddedConnection("acme"))
        builder = RowBuilder(
            Resolver([(ref, InMemoryRegistry("acme", {}))], clock), ColumnMode.FULL
        )
        self.processor = BatchProcessor(
            builder,
            Destinations(table, self.sink, InMemoryPublisher(), self.bad_rows, self.failed),
            TypeTracker(ColumnMode.FULL),
            clock,
            Processor("plowline-loader", "0.1.0"),
            limits,
            style,
        )

    def bad(self) -> list[dict[str, Any]]:
        """Return the published failed events, decoded."""
        return [json.loads(data) for data in self.bad_rows.messages]


def _line(**fields: Any) -> bytes:
    return with_entities(event_id=str(uuid.uuid4()), **fields).encode()


def _refuse_invalid(row: Row) -> InsertFailure:
    return InsertFailure(row, InsertReason.INVALID, "Cannot convert value to integer")


def _message(data: bytes) -> InboundMessage:
    return InboundMessage(data, "m-1", 1_714_557_604_000_000)


def test_a_row_the_table_refuses_as_invalid_is_a_runtime_error() -> None:
    """2.x: a refused row is loader_runtime_error naming the table's reason, with the event."""
    rig = Rig(FailedEventStyle.LOADER_2X, reject=_refuse_invalid)
    line = _line()

    outcome = rig.processor.process([_message(line)])

    (runtime,) = rig.bad()
    assert runtime["schema"] == f"{BADROWS}/loader_runtime_error/jsonschema/1-0-1"
    assert (runtime["data"]["failure"], runtime["data"]["payload"]["event_id"]) == (
        "Cannot convert value to integer",
        line.split(b"\t")[6].decode(),
    )
    assert (outcome.bad, outcome.failed, rig.failed.messages) == (1, 0, [])
    assert outcome.bad_by_code == {"runtime": 1}


def test_a_1x_config_still_sends_refused_rows_to_failed_inserts() -> None:
    """1.x: the same refusal is a failed insert for the repeater, as before."""
    rig = Rig(FailedEventStyle.LOADER_1X, reject=_refuse_invalid)

    outcome = rig.processor.process([_message(_line())])

    assert (outcome.failed, rig.bad_rows.messages) == (1, [])


def test_a_row_needing_a_column_still_goes_to_failed_inserts() -> None:
    """2.x config: a row refused for a missing column waits for the mutator (failedInserts)."""

    def unknown(row: Row) -> InsertFailure:
        return InsertFailure(row, InsertReason.UNKNOWN_FIELD, "no such field", "contexts_x_1")

    rig = Rig(FailedEventStyle.LOADER_2X, reject=unknown)

    outcome = rig.processor.process([_message(_line())])

    assert (outcome.failed, rig.bad_rows.messages) == (1, [])


def test_an_oversized_failed_event_is_2x_size_violation() -> None:
    """2.x: a failed event over the limit is cut to a tenth of it, with 2.x's expectation."""
    limit = 3_000
    rig = Rig(FailedEventStyle.LOADER_2X, limits=Limits(max_bad_row_bytes=limit))

    rig.processor.process([_message(b"broken\t" + b"z" * 10_000)])

    (violation,) = rig.bad()
    failure = violation["data"]["failure"]
    assert violation["schema"] == f"{BADROWS}/size_violation/jsonschema/1-0-0"
    assert (failure["expectation"], failure["maximumAllowedSizeBytes"]) == (BAD_ROW_TOO_BIG, limit)
    assert failure["actualSizeBytes"] > limit
    assert violation["data"]["payload"].startswith('{"schema":"iglu:com.snowplowanalytics')
    assert len(violation["data"]["payload"]) == limit // 10


@pytest.mark.parametrize(
    ("data", "kind", "limit"),
    [
        pytest.param(b"not an event", "loader_parsing_error", None, id="loader-parsing-error"),
        pytest.param(
            _line(contexts=[(UNKNOWN, {"a": 1})]),
            "loader_iglu_error",
            None,
            id="loader-iglu-error",
        ),
        pytest.param(_line(), "loader_runtime_error", None, id="loader-runtime-error"),
        pytest.param(b"x" * 5_000, "size_violation", 3_000, id="size-violation"),
    ],
)
def test_each_2x_failed_event_is_valid_against_iglu_central(
    data: bytes, kind: str, limit: int | None, iglu_central_dir: Path
) -> None:
    """Every failed-event type a 2.x config writes validates against its Iglu Central schema."""
    limits = Limits(max_bad_row_bytes=limit) if limit else None
    rig = Rig(FailedEventStyle.LOADER_2X, reject=_refuse_invalid, limits=limits)

    rig.processor.process([_message(data)])

    (document,) = rig.bad()
    key = SchemaKey.parse(document["schema"])
    schema = json.loads((iglu_central_dir / "schemas" / key.to_path()).read_text())
    errors = Draft4Validator(schema, format_checker=FormatChecker()).iter_errors(document["data"])
    assert (kind, []) == (key.name, [error.message for error in errors])


@pytest.mark.parametrize(
    ("mode", "style"),
    [
        pytest.param(ColumnMode.MAJOR, FailedEventStyle.LOADER_2X, id="major-2x"),
        pytest.param(ColumnMode.FULL, FailedEventStyle.LOADER_1X, id="full-1x"),
    ],
)
def test_the_column_mode_picks_the_failed_events(mode: ColumnMode, style: FailedEventStyle) -> None:
    """A 2.x config (column mode major) writes 2.x's failed events; a 1.x config 1.x's."""
    assert style == failed_event_style(mode)
