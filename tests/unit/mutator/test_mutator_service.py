"""The mutator's service layer (``Mutator``) and listener over in-memory fakes."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from types import TracebackType
from typing import Any

import pytest
from plowline_cloud.pubsub.streaming import PubSubReceivedMessage
from plowline_core.errors import RegistryUnavailable
from plowline_core.iglu.config import HttpConnection, RepositoryRef
from plowline_core.iglu.key import SchemaKey
from plowline_core.iglu.resolver import Resolver
from plowline_core.messages import SHREDDED_TYPE_URI, encode_types
from plowline_core.schema.entity import ColumnMode, EntityType, ShredProperty
from plowline_core.schema.field import Field, FieldType, Mode
from plowline_core.testing.clock import FixedClock
from plowline_core.testing.registry import InMemoryRegistry
from plowline_core.testing.table import InMemoryTableSchemaStore
from plowline_mutator.catalogue import describe_columns
from plowline_mutator.listener import TypesListener
from plowline_mutator.metrics import MutatorMetrics
from plowline_mutator.mutation import Mutator

ATOMIC = (Field("event_id", FieldType.STRING, Mode.REQUIRED),)
CLICK = SchemaKey.parse("iglu:com.acme/link_click/jsonschema/1-0-0")
CLICK_101 = SchemaKey.parse("iglu:com.acme/link_click/jsonschema/1-0-1")
PAGE = SchemaKey.parse("iglu:com.acme/web-page/jsonschema/1-0-0")
MISSING = SchemaKey.parse("iglu:com.acme/nowhere/jsonschema/1-0-0")
SCHEMAS: dict[SchemaKey, dict[str, Any]] = {
    CLICK: {"type": "object", "properties": {"targetUrl": {"type": "string"}}},
    CLICK_101: {
        "type": "object",
        "properties": {"targetUrl": {"type": "string"}, "elementId": {"type": "string"}},
    },
    PAGE: {"type": "object", "properties": {"id": {"type": "string"}}},
}


class CountingLock:
    """A context-manager lock that counts how often it was taken."""

    def __init__(self) -> None:
        self.entered = 0
        self._lock = threading.Lock()

    def __enter__(self) -> None:
        self._lock.acquire()
        self.entered += 1

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._lock.release()


def build(
    mode: ColumnMode = ColumnMode.FULL, table: tuple[Field, ...] = ATOMIC
) -> tuple[Mutator, InMemoryRegistry, InMemoryTableSchemaStore, CountingLock]:
    """Return a mutator over an in-memory registry and table, and the fakes."""
    registry = InMemoryRegistry("mem", SCHEMAS)
    ref = RepositoryRef("mem", 0, (), HttpConnection("http://127.0.0.1:1"))
    resolver = Resolver([(ref, registry)], FixedClock(datetime(2026, 1, 1, tzinfo=UTC)), 0)
    store = InMemoryTableSchemaStore(table)
    lock = CountingLock()
    return Mutator(resolver, store, mode, lock), registry, store, lock


def unstruct(key: SchemaKey) -> EntityType:
    """Return the unstruct-event type of a key."""
    return EntityType(key, ShredProperty.UNSTRUCT_EVENT)


def context(key: SchemaKey) -> EntityType:
    """Return the context type of a key."""
    return EntityType(key, ShredProperty.CONTEXTS)


def names(fields: tuple[Field, ...]) -> list[str]:
    """Return the fields' names."""
    return [f.name for f in fields]


def test_new_unstruct_type_adds_its_column() -> None:
    """A new unstruct event type adds one NULLABLE RECORD column."""
    mutator, _, store, _ = build()
    mutator.add_types([unstruct(CLICK)])
    expected = Field(
        "unstruct_event_com_acme_link_click_1_0_0",
        FieldType.RECORD,
        Mode.NULLABLE,
        (Field("target_url", FieldType.STRING, Mode.NULLABLE),),
    )
    assert expected == store.backend[-1]


def test_all_columns_of_one_call_go_in_one_patch() -> None:
    """Two new types of one message are added by a single add_fields call."""
    mutator, _, store, _ = build()
    mutator.add_types([unstruct(CLICK), context(PAGE)])
    expected = [["unstruct_event_com_acme_link_click_1_0_0", "contexts_com_acme_web_page_1_0_0"]]
    assert expected == [names(patch) for patch in store.patches]


def test_existing_column_needs_no_patch() -> None:
    """A type whose column exists adds nothing and reports nothing added."""
    mutator, _, store, _ = build()
    mutator.add_types([context(PAGE)])
    result = mutator.add_types([context(PAGE)])
    expected = (1, ())
    assert expected == (len(store.patches), result.added)


def test_stale_cache_is_refreshed_once_before_patching() -> None:
    """A column another process added is found by one refresh, with no patch."""
    mutator, _, store, _ = build()
    column = mutator.column_for(context(PAGE))
    assert isinstance(column, Field)
    store.widen_backend([column])
    mutator.add_types([context(PAGE)])
    expected: tuple[int, list[object]] = (1, [])
    assert expected == (store.refreshes, store.patches)


def test_unknown_schema_is_reported_and_others_still_added() -> None:
    """A schema no repository has is reported; the message's other columns are added."""
    mutator, *_ = build()
    result = mutator.add_types([unstruct(MISSING), context(PAGE)])
    assert ((unstruct(MISSING),), ["contexts_com_acme_web_page_1_0_0"]) == (
        result.unknown,
        names(result.added),
    )


def test_registry_outage_propagates_without_patching() -> None:
    """A failing registry raises RegistryUnavailable and leaves the table alone."""
    mutator, registry, store, _ = build()
    registry.failing = True
    with pytest.raises(RegistryUnavailable):
        mutator.add_types([unstruct(CLICK)])
    expected: list[object] = []
    assert expected == store.patches


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        pytest.param(
            ColumnMode.FULL,
            [
                "unstruct_event_com_acme_link_click_1_0_0",
                "unstruct_event_com_acme_link_click_1_0_1",
            ],
            id="full-two-columns",
        ),
        pytest.param(
            ColumnMode.MAJOR, ["unstruct_event_com_acme_link_click_1"], id="major-one-column"
        ),
    ],
)
def test_revision_gets_a_column_per_column_mode(mode: ColumnMode, expected: list[str]) -> None:
    """1-0-0 then 1-0-1 gives two columns in full mode and one widened column in major mode."""
    mutator, _, store, _ = build(mode)
    mutator.add_types([unstruct(CLICK)])
    mutator.add_types([unstruct(CLICK_101)])
    assert expected == names(store.backend[1:])


def test_major_mode_revision_widens_the_record() -> None:
    """In major mode a new property of 1-0-1 becomes a nested field of the 1 column."""
    mutator, *_ = build(ColumnMode.MAJOR)
    mutator.add_types([unstruct(CLICK)])
    result = mutator.add_types([unstruct(CLICK_101)])
    expected = ["element_id", "target_url"]
    assert expected == sorted(names(result.added[0].fields))


def test_conflicting_column_is_reported_not_patched() -> None:
    """A column of the same name under another type is a conflict and no patch."""
    clash = Field("contexts_com_acme_web_page_1_0_0", FieldType.STRING, Mode.NULLABLE)
    mutator, _, store, _ = build(table=(*ATOMIC, clash))
    result = mutator.add_types([context(PAGE)])
    expected: tuple[list[str], list[object]] = (["contexts_com_acme_web_page_1_0_0"], [])
    assert expected == ([c.path for c in result.conflicts_of(context(PAGE))], store.patches)


def test_table_updates_take_the_lock() -> None:
    """Every call that touches the table holds the shared lock."""
    mutator, _, _, lock = build()
    mutator.add_types([unstruct(CLICK)])
    mutator.add_types([context(PAGE)])
    expected = 2
    assert expected == lock.entered


def test_columns_of_known_types_name_their_schema() -> None:
    """Columns this process built are listed with their exact schema URI."""
    mutator, _, store, _ = build()
    mutator.add_types([unstruct(CLICK)])
    listed = describe_columns(store.backend, mutator.known_types(), ColumnMode.FULL)
    expected = [("iglu:com.acme/link_click/jsonschema/1-0-0", "1-0-0")]
    assert expected == [(item["schema"], item["version"]) for item in listed]


def test_columns_of_unknown_origin_show_what_the_name_says() -> None:
    """A column built elsewhere has no exact schema, only its name parts."""
    other = Field("contexts_com_foo_bar_baz_2_1_0", FieldType.RECORD, Mode.REPEATED, ATOMIC)
    listed = describe_columns((*ATOMIC, other), {}, ColumnMode.FULL)
    expected = [(None, "com_foo_bar_baz", "2-1-0", "CONTEXTS")]
    assert expected == [
        (i["schema"], i["vendorAndName"], i["version"], i["shredProperty"]) for i in listed
    ]


# -- listener ----------------------------------------------------------------------------


class Settled:
    """What happened to one fake delivery."""

    def __init__(self) -> None:
        self.outcomes: list[str] = []


def delivery(data: bytes, settled: Settled) -> PubSubReceivedMessage:
    """Return a delivery whose ack/nack are recorded in ``settled``."""
    return PubSubReceivedMessage(
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


def listen(data: bytes, failing: bool = False) -> tuple[list[str], InMemoryTableSchemaStore]:
    """Hand one payload to a listener and return how it was settled and the table."""
    mutator, registry, store, _ = build()
    registry.failing = failing
    waits: list[float] = []
    listener = TypesListener(mutator, MutatorMetrics(), retry_delay=2.0, wait=waits.append)
    settled = Settled()
    listener(delivery(data, settled))
    return settled.outcomes, store


def test_listener_acks_after_adding_columns() -> None:
    """A plain types array gets its column added, then the ack."""
    outcomes, store = listen(encode_types([unstruct(CLICK)]))
    expected = (["ack"], 1)
    assert expected == (outcomes, len(store.patches))


def test_listener_reads_the_shredded_type_form() -> None:
    """The self-describing shredded_type payload is read like the plain array."""
    payload = (
        b'{"schema":"' + SHREDDED_TYPE_URI.encode() + b'","data":'
        b'{"schema":"iglu:com.acme/web-page/jsonschema/1-0-0","location":"CONTEXTS"}}'
    )
    outcomes, store = listen(payload)
    expected = (["ack"], ["contexts_com_acme_web_page_1_0_0"])
    assert expected == (outcomes, names(store.backend[1:]))


@pytest.mark.parametrize(
    "payload",
    [
        pytest.param(b"not json", id="not-json"),
        pytest.param(b'[{"schema":"iglu:bad","type":"CONTEXTS"}]', id="bad-uri"),
        pytest.param(b'[{"schema":"iglu:com.acme/a/jsonschema/1-0-0","type":"X"}]', id="bad-type"),
    ],
)
def test_listener_acks_malformed_messages(payload: bytes) -> None:
    """A message that can never be read is acked and changes nothing."""
    outcomes, store = listen(payload)
    expected: tuple[list[str], list[object]] = (["ack"], [])
    assert expected == (outcomes, store.patches)


def test_listener_acks_unknown_schema() -> None:
    """An unknown schema is acked: the loader sends the type again."""
    outcomes, _ = listen(encode_types([unstruct(MISSING)]))
    expected = ["ack"]
    assert expected == outcomes


def test_listener_nacks_while_the_registry_fails() -> None:
    """A failing registry gets the message nacked for redelivery."""
    outcomes, store = listen(encode_types([unstruct(CLICK)]), failing=True)
    expected: tuple[list[str], list[object]] = (["nack"], [])
    assert expected == (outcomes, store.patches)
