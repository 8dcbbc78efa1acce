"""The mutator over a table with hand-made columns of types plowline does not write."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from typing import Any

from plowline_core.iglu.config import HttpConnection, RepositoryRef
from plowline_core.iglu.key import SchemaKey
from plowline_core.iglu.resolver import Resolver
from plowline_core.schema.entity import ColumnMode, EntityType, ShredProperty
from plowline_core.schema.field import Field
from plowline_core.testing.clock import FixedClock
from plowline_core.testing.registry import InMemoryRegistry
from plowline_core.testing.table import InMemoryTableSchemaStore
from plowline_mutator.catalogue import describe_columns
from plowline_mutator.mutation import Mutator

CLICK = SchemaKey.parse("iglu:com.acme/link_click/jsonschema/1-0-0")
PAGE = SchemaKey.parse("iglu:com.acme/page/jsonschema/1-0-0")
SCHEMA = {"type": "object", "properties": {"targetUrl": {"type": "string"}}}
HAND_MADE = [
    {"name": "event_id", "type": "STRING", "mode": "REQUIRED"},
    {"name": "place", "type": "GEOGRAPHY", "mode": "NULLABLE", "description": "by hand"},
    {"name": "span", "type": "RANGE", "mode": "NULLABLE", "rangeElementType": {"type": "DATE"}},
    {"name": "later", "type": "SOMETHING_NEW", "mode": "NULLABLE"},
    {"name": "unstruct_event_com_acme_link_click_1_0_0", "type": "DATETIME", "mode": "NULLABLE"},
]


def _mutator() -> tuple[Mutator, InMemoryTableSchemaStore]:
    registry = InMemoryRegistry("mem", {CLICK: SCHEMA, PAGE: SCHEMA})
    ref = RepositoryRef("mem", 0, (), HttpConnection("http://127.0.0.1:1"))
    resolver = Resolver([(ref, registry)], FixedClock(datetime(2026, 1, 1, tzinfo=UTC)), 0)
    store = InMemoryTableSchemaStore(tuple(Field.from_api(column) for column in HAND_MADE))
    return Mutator(resolver, store, ColumnMode.FULL, threading.Lock()), store


def test_a_clash_is_a_conflict_and_the_other_type_is_added() -> None:
    """A type whose column name a DATETIME column holds is a conflict; another type is added."""
    mutator, store = _mutator()
    result = mutator.add_types(
        [
            EntityType(CLICK, ShredProperty.UNSTRUCT_EVENT),
            EntityType(PAGE, ShredProperty.CONTEXTS),
        ]
    )
    expected = (
        ["unstruct_event_com_acme_link_click_1_0_0: table has DATETIME, schema needs RECORD"],
        ["contexts_com_acme_page_1_0_0"],
        HAND_MADE,
    )
    actual = (
        [conflict.reason for conflict in result.conflicts],
        [field.name for field in result.added],
        [field.to_api() for field in store.backend[: len(HAND_MADE)]],
    )
    assert expected == actual


def test_columns_are_listed_as_the_table_has_them() -> None:
    """GET /v1/columns's catalogue shows the hand-made entity-named column as BigQuery gave it."""
    _, store = _mutator()
    listed: list[dict[str, Any]] = describe_columns(store.refresh(), {}, ColumnMode.FULL)
    expected = [("unstruct_event_com_acme_link_click_1_0_0", HAND_MADE[-1])]
    assert expected == [(item["column"], item["field"]) for item in listed]
