"""One type the mutator cannot apply never holds back the others of its message."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from typing import Any

import pytest
from plowline_cloud.pubsub.streaming import PubSubReceivedMessage
from plowline_core.errors import PermanentError, TransientError
from plowline_core.iglu.config import HttpConnection, RepositoryRef
from plowline_core.iglu.key import SchemaKey
from plowline_core.iglu.resolver import Resolver
from plowline_core.messages import encode_types
from plowline_core.schema.entity import ColumnMode, EntityType, ShredProperty
from plowline_core.schema.field import Field, FieldType, Mode
from plowline_core.schema.limits import MAX_LEAF_FIELDS
from plowline_core.testing.clock import FixedClock
from plowline_core.testing.registry import InMemoryRegistry
from plowline_core.testing.table import InMemoryTableSchemaStore
from plowline_mutator.listener import TypesListener
from plowline_mutator.metrics import MutatorMetrics
from plowline_mutator.mutation import Mutator, Rejection

ATOMIC = (Field("event_id", FieldType.STRING, Mode.REQUIRED),)
GOOD = SchemaKey.parse("iglu:com.acme/link_click/jsonschema/1-0-0")
LONG_VENDOR = SchemaKey.parse(f"iglu:com.{'v' * 300}/thing/jsonschema/1-0-0")
EMPTY_PROPERTY = SchemaKey.parse("iglu:com.acme/empty_key/jsonschema/1-0-0")
WIDE = SchemaKey.parse("iglu:com.acme/wide/jsonschema/1-0-0")
MISSING = SchemaKey.parse("iglu:com.acme/nowhere/jsonschema/1-0-0")
GOOD_COLUMN = "unstruct_event_com_acme_link_click_1_0_0"
WIDE_COLUMN = "contexts_com_acme_wide_1_0_0"


def _object(*names: str) -> dict[str, Any]:
    return {"type": "object", "properties": {name: {"type": "string"} for name in names}}


SCHEMAS: dict[SchemaKey, dict[str, Any]] = {
    GOOD: _object("targetUrl"),
    LONG_VENDOR: _object("a"),
    EMPTY_PROPERTY: _object("", "b"),
    WIDE: _object("x", "y", "z"),
}


def unstruct(key: SchemaKey) -> EntityType:
    """Return the unstruct-event type of a key."""
    return EntityType(key, ShredProperty.UNSTRUCT_EVENT)


def context(key: SchemaKey) -> EntityType:
    """Return the context type of a key."""
    return EntityType(key, ShredProperty.CONTEXTS)


def build(table: tuple[Field, ...] = ATOMIC) -> tuple[Mutator, InMemoryTableSchemaStore]:
    """Return a mutator over an in-memory registry and table, and the table."""
    registry = InMemoryRegistry("mem", SCHEMAS)
    ref = RepositoryRef("mem", 0, (), HttpConnection("http://127.0.0.1:1"))
    resolver = Resolver([(ref, registry)], FixedClock(datetime(2026, 1, 1, tzinfo=UTC)), 0)
    store = InMemoryTableSchemaStore(table)
    return Mutator(resolver, store, ColumnMode.FULL, threading.Lock()), store


def near_the_limit(room: int) -> tuple[Field, ...]:
    """Return a table with ``room`` leaf fields left under BigQuery's limit."""
    fillers = tuple(
        Field(f"c{i}", FieldType.STRING) for i in range(MAX_LEAF_FIELDS - room - len(ATOMIC))
    )
    return (*ATOMIC, *fillers)


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param(unstruct(LONG_VENDOR), id="column-name-over-300-characters"),
        pytest.param(unstruct(EMPTY_PROPERTY), id="empty-nested-name"),
    ],
)
def test_illegal_name_is_rejected_and_the_rest_added(bad: EntityType) -> None:
    """A column with an illegal name anywhere is rejected; the good type of the call is added."""
    mutator, store = build()
    result = mutator.add_types([bad, unstruct(GOOD)])
    rejection = result.rejection_of(bad)
    expected = (Rejection.ILLEGAL_NAME, [GOOD_COLUMN])
    assert expected == (
        rejection.kind if rejection else None,
        [f.name for f in store.backend[len(ATOMIC) :]],
    )


def test_column_past_the_limit_is_rejected_and_a_smaller_one_added() -> None:
    """At 9,999 leaf fields a 3-leaf column is rejected and a 1-leaf column still added."""
    mutator, store = build(near_the_limit(room=1))
    result = mutator.add_types([context(WIDE), unstruct(GOOD)])
    rejection = result.rejection_of(context(WIDE))
    expected = (Rejection.COLUMN_LIMIT, GOOD_COLUMN, MAX_LEAF_FIELDS)
    assert expected == (
        rejection.kind if rejection else None,
        store.backend[-1].name,
        len(store.backend),
    )


def test_column_refused_by_bigquery_is_isolated_from_the_patch() -> None:
    """When BigQuery refuses a patch of two columns, the good one is added on its own."""
    mutator, store = build()
    store.refused[WIDE_COLUMN] = "Too many total leaf fields"
    result = mutator.add_types([context(WIDE), unstruct(GOOD)])
    rejection = result.rejection_of(context(WIDE))
    expected = (Rejection.REFUSED, [GOOD_COLUMN], [GOOD_COLUMN])
    assert expected == (
        rejection.kind if rejection else None,
        [f.name for f in result.added],
        [f.name for f in store.backend[len(ATOMIC) :]],
    )


def test_rejected_type_is_left_out_of_the_columns_held() -> None:
    """A rejected type has no column in the result, so callers never report it as there."""
    mutator, _ = build()
    result = mutator.add_types([unstruct(LONG_VENDOR), unstruct(GOOD)])
    expected = [unstruct(GOOD)]
    assert expected == list(result.columns)


class Settled:
    """How deliveries were settled, in order."""

    def __init__(self) -> None:
        self.outcomes: list[str] = []


def deliver(listener: TypesListener, data: bytes) -> list[str]:
    """Hand one payload to the listener; return how it was settled."""
    settled = Settled()
    listener(
        PubSubReceivedMessage(
            data=data,
            attributes={},
            message_id="m-1",
            publish_time=datetime(2026, 1, 1, tzinfo=UTC),
            delivery_attempt=None,
            ack_id="a-1",
            on_ack=lambda: settled.outcomes.append("ack"),
            on_nack=lambda: settled.outcomes.append("nack"),
            on_extend=lambda seconds: None,
        )
    )
    return settled.outcomes


def listener_over(
    store_table: tuple[Field, ...] = ATOMIC,
) -> tuple[TypesListener, InMemoryTableSchemaStore, MutatorMetrics]:
    """Return a listener (no real waits) over a fresh mutator, its table and metrics."""
    mutator, store = build(store_table)
    metrics = MutatorMetrics()
    return TypesListener(mutator, metrics, retry_delay=1.0, wait=lambda _: None), store, metrics


def test_listener_acks_a_message_with_every_kind_of_unapplicable_type() -> None:
    """Illegal name, column limit and unknown schema are acked with the good type added."""
    listener, store, metrics = listener_over(near_the_limit(room=1))
    payload = encode_types(
        [unstruct(LONG_VENDOR), context(WIDE), unstruct(MISSING), unstruct(GOOD)]
    )
    outcomes = deliver(listener, payload)
    counted = {
        kind: metrics.errors.labels("listener", kind)._value.get()
        for kind in ("illegal_name", "column_limit", "unknown_schema")
    }
    expected = (["ack"], GOOD_COLUMN, {"illegal_name": 1, "column_limit": 1, "unknown_schema": 1})
    assert expected == (outcomes, store.backend[-1].name, counted)


def test_listener_redelivered_rejection_is_acked_again_without_a_patch() -> None:
    """The same unapplicable message redelivered is acked again: it never loops."""
    listener, store, _ = listener_over()
    payload = encode_types([unstruct(LONG_VENDOR)])
    outcomes = deliver(listener, payload) + deliver(listener, payload)
    expected: tuple[list[str], list[object]] = (["ack", "ack"], [])
    assert expected == (outcomes, store.patches)


@pytest.mark.parametrize(
    ("error", "outcome"),
    [
        pytest.param(TransientError("503 backendError"), "nack", id="transient-nacked"),
        pytest.param(PermanentError("404 Not found: Table"), "ack", id="table-missing-acked"),
    ],
)
def test_listener_settles_table_failures_by_their_nature(error: Exception, outcome: str) -> None:
    """A failing table is nacked when it may recover and acked when retrying cannot help."""
    listener, store, _ = listener_over()
    store.fail_with = error  # type: ignore[assignment]
    assert [outcome] == deliver(listener, encode_types([unstruct(GOOD)]))
