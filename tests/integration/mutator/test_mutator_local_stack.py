"""The mutator on the local stack: real Pub/Sub and BigQuery stand-ins, official clients.

Each test gets a fresh events table (atomic columns), types topic and subscription. Schemas
come from Iglu Central (embedded, ``tests/data/iglu-central``) and from an in-memory registry a
test can fill and make fail (``MutatorRig.registry``).
"""

from __future__ import annotations

import threading
import uuid
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from google.cloud import bigquery
from plowline_cloud.bigquery import BigQueryTableSchemaStore, create_events_table
from plowline_cloud.clients import bigquery_client, publish_api_client, subscriber_client
from plowline_cloud.clock import SystemClock
from plowline_cloud.iglu.embedded import EmbeddedRegistry
from plowline_cloud.pubsub.publisher import PubSubPublisher
from plowline_cloud.pubsub.streaming import PubSubSubscriber
from plowline_core.event.fields import ATOMIC_COLUMNS
from plowline_core.iglu.config import EmbeddedConnection, HttpConnection, RepositoryRef
from plowline_core.iglu.key import SchemaKey
from plowline_core.iglu.resolver import ResolvedSchema, Resolver
from plowline_core.messages import encode_types
from plowline_core.schema.columns import column_field
from plowline_core.schema.entity import ColumnMode, EntityType, ShredProperty
from plowline_core.schema.field import Field
from plowline_core.schema.limits import MAX_LEAF_FIELDS, leaf_count
from plowline_core.testing.clock import FixedClock
from plowline_core.testing.registry import InMemoryRegistry
from plowline_devstack.stack.lifecycle import LocalStack
from plowline_mutator.api import ApiContext, create_app
from plowline_mutator.listener import TypesListener
from plowline_mutator.metrics import MutatorMetrics
from plowline_mutator.mutation import Mutator
from pydantic import SecretStr
from starlette.exceptions import StarletteDeprecationWarning
from support.timing import wait_for

with warnings.catch_warnings():
    # Starlette asks for the httpx2 package, which is not installed; httpx works.
    warnings.simplefilter("ignore", StarletteDeprecationWarning)
    from fastapi.testclient import TestClient


@dataclass
class MutatorRig:
    """A mutator wired to real BigQuery and Pub/Sub stand-ins, and what a test inspects."""

    stack: LocalStack
    bq: bigquery.Client
    table_ref: str
    registry: InMemoryRegistry
    resolver: Resolver
    store: BigQueryTableSchemaStore
    mutator: Mutator
    metrics: MutatorMetrics
    publisher: PubSubPublisher
    subscriber: PubSubSubscriber

    def columns(self) -> dict[str, Field]:
        """Return the table's columns as BigQuery has them now (tables.get)."""
        table = self.bq.get_table(self.table_ref)
        return {f.name: Field.from_api(f.to_api_repr()) for f in table.schema}

    def start_listener(self, retry_delay: float = 0.2) -> TypesListener:
        """Start the types listener on this test's subscription."""
        listener = TypesListener(self.mutator, self.metrics, retry_delay=retry_delay)
        self.subscriber.start(listener)
        return listener

    def publish(self, *payloads: bytes) -> None:
        """Publish payloads on this test's types topic."""
        self.publisher.publish(list(payloads))


def build_mutator(
    rig_parts: tuple[Resolver, BigQueryTableSchemaStore], mode: ColumnMode
) -> Mutator:
    """Return a mutator (own lock) over a resolver and store."""
    resolver, store = rig_parts
    return Mutator(resolver, store, mode, threading.Lock())


@pytest.fixture(params=[ColumnMode.FULL], ids=["full"])
def column_mode(request: pytest.FixtureRequest) -> ColumnMode:
    """The column mode of the rig (tests override with indirect parametrization)."""
    mode: ColumnMode = request.param
    return mode


@pytest.fixture
def rig(
    local_stack: LocalStack, iglu_central_dir: Path, column_mode: ColumnMode
) -> Iterator[MutatorRig]:
    """A fresh events table, types topic and subscription, and a mutator over them."""
    suffix = uuid.uuid4().hex[:10]
    endpoints = local_stack.endpoints
    bq = bigquery_client(local_stack.project, endpoints.bigquery_url)
    table_ref = f"{local_stack.project}.{local_stack.dataset}.events_{suffix}"
    create_events_table(bq, table_ref, ATOMIC_COLUMNS)
    registry = InMemoryRegistry("mem")
    central = EmbeddedRegistry("Iglu Central", iglu_central_dir)
    resolver = Resolver(
        [
            (RepositoryRef("mem", 0, (), HttpConnection("http://127.0.0.1:1")), registry),
            (RepositoryRef("Iglu Central", 1, (), EmbeddedConnection(".")), central),
        ],
        FixedClock(datetime(2026, 1, 1, tzinfo=UTC)),
        cache_size=0,
    )
    store = BigQueryTableSchemaStore(bq, table_ref, 60.0, SystemClock())
    pub_client = publish_api_client(endpoints.pubsub_target)
    sub_client = subscriber_client(endpoints.pubsub_target)
    topic = f"projects/{local_stack.project}/topics/types-{suffix}"
    subscription = f"projects/{local_stack.project}/subscriptions/types-mutator-{suffix}"
    pub_client.create_topic(name=topic)
    sub_client.create_subscription(name=subscription, topic=topic, ack_deadline_seconds=10)
    subscriber = PubSubSubscriber(sub_client, subscription, callback_threads=2)
    rig = MutatorRig(
        local_stack,
        bq,
        table_ref,
        registry,
        resolver,
        store,
        build_mutator((resolver, store), column_mode),
        MutatorMetrics(),
        PubSubPublisher(pub_client, topic),
        subscriber,
    )
    try:
        yield rig
    finally:
        subscriber.stop(10)
        sub_client.close()
        pub_client.transport.close()
        bq.close()  # type: ignore[no-untyped-call]  # untyped in the client


def object_schema(properties: dict[str, Any]) -> dict[str, Any]:
    """Return a JSON Schema of an object with the given properties."""
    return {"type": "object", "properties": properties, "additionalProperties": False}


TOKEN = "integration-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
WEBHOOK = "iglu:com.iterable/system_webhook/jsonschema/{}"
CLICK = SchemaKey.parse("iglu:com.acme/link_click/jsonschema/1-0-0")
PAGE = SchemaKey.parse("iglu:com.acme/web_page/jsonschema/1-0-0")


def unstruct(uri: str) -> EntityType:
    """Return the unstruct-event type of a URI."""
    return EntityType(SchemaKey.parse(uri), ShredProperty.UNSTRUCT_EVENT)


def api(rig: MutatorRig) -> TestClient:
    """Return a TestClient over the API wired to the rig's mutator (shared lock)."""
    context = ApiContext(rig.mutator, rig.store, rig.metrics, SecretStr(TOKEN))
    return TestClient(create_app(context))


def test_listener_adds_unstruct_and_context_columns(rig: MutatorRig) -> None:
    """A new unstruct event and a new context published on the types topic get their columns."""
    rig.registry.add(CLICK, object_schema({"targetUrl": {"type": "string"}}))
    rig.registry.add(PAGE, object_schema({"id": {"type": "string", "format": "uuid"}}))
    rig.start_listener()
    rig.publish(
        b"malformed",
        encode_types(
            [
                EntityType(CLICK, ShredProperty.UNSTRUCT_EVENT),
                EntityType(PAGE, ShredProperty.CONTEXTS),
            ]
        ),
    )
    wanted = {"unstruct_event_com_acme_link_click_1_0_0", "contexts_com_acme_web_page_1_0_0"}
    assert wait_for(lambda: wanted <= set(rig.columns()), 20), "timed out waiting for both columns"
    expected = "REPEATED"
    assert expected == rig.columns()["contexts_com_acme_web_page_1_0_0"].mode.value


@pytest.mark.parametrize(
    ("column_mode", "expected"),
    [
        pytest.param(
            ColumnMode.FULL,
            [
                f"unstruct_event_com_iterable_system_webhook_{v}"
                for v in ("1_0_0", "1_0_1", "2_0_0")
            ],
            id="full",
        ),
        pytest.param(
            ColumnMode.MAJOR,
            [f"unstruct_event_com_iterable_system_webhook_{v}" for v in ("1", "2")],
            id="major",
        ),
    ],
    indirect=["column_mode"],
)
def test_evolution_adds_columns_per_mode(rig: MutatorRig, expected: list[str]) -> None:
    """1-0-0, 1-0-1, 2-0-0 give three columns in full mode and two in major mode."""
    for version in ("1-0-0", "1-0-1", "2-0-0"):
        rig.mutator.add_types([unstruct(WEBHOOK.format(version))])
    assert expected == [name for name in rig.columns() if "system_webhook" in name]


def test_nested_records_and_arrays_land_as_planned(rig: MutatorRig) -> None:
    """A schema with nested objects and arrays gets exactly the planned column."""
    entity = unstruct(WEBHOOK.format("1-0-0"))
    resolved = rig.resolver.resolve(entity.schema)
    assert isinstance(resolved, ResolvedSchema)
    planned = column_field(entity.schema, resolved.schema, entity.shred_property)
    rig.mutator.add_types([entity])
    assert planned == rig.columns()[planned.name]


def test_burst_of_fifty_types_in_few_messages(rig: MutatorRig) -> None:
    """Fifty new types in five messages all get their columns."""
    keys = [SchemaKey.parse(f"iglu:com.acme.burst/type_{i}/jsonschema/1-0-0") for i in range(50)]
    for key in keys:
        rig.registry.add(key, object_schema({"n": {"type": "integer"}}))
    rig.start_listener()
    types = [EntityType(k, ShredProperty.CONTEXTS) for k in keys]
    rig.publish(*(encode_types(types[i : i + 10]) for i in range(0, 50, 10)))
    wanted = {f"contexts_com_acme_burst_type_{i}_1_0_0" for i in range(50)}
    assert wait_for(lambda: wanted <= set(rig.columns()), 60), "timed out waiting for fifty columns"
    expected = 50
    assert expected == len(wanted & set(rig.columns()))


def test_http_and_listener_add_the_same_type_at_once(rig: MutatorRig) -> None:
    """An HTTP add racing a listener add of the same type ends with one column and no error."""
    rig.registry.add(CLICK, object_schema({"targetUrl": {"type": "string"}}))
    client = api(rig)
    rig.start_listener()
    statuses: list[int] = []
    post = threading.Thread(
        target=lambda: statuses.append(
            client.post(
                "/v1/columns",
                json={"schema": CLICK.to_uri(), "shredProperty": "UNSTRUCT_EVENT"},
                headers=AUTH,
            ).status_code
        )
    )
    rig.publish(encode_types([EntityType(CLICK, ShredProperty.UNSTRUCT_EVENT)]))
    post.start()
    post.join(30)
    name = "unstruct_event_com_acme_link_click_1_0_0"
    acked = rig.metrics.types_received.labels("listener")
    assert wait_for(lambda: acked._value.get() == 1, 20), "timed out waiting for ack"
    expected = (True, 1)
    assert expected == (statuses[0] in (200, 201), list(rig.columns()).count(name))


def test_http_refuses_a_bad_token(rig: MutatorRig) -> None:
    """A wrong bearer token gets 401 and the table is unchanged."""
    before = list(rig.columns())
    response = api(rig).post(
        "/v1/columns",
        json={"schema": WEBHOOK.format("1-0-0"), "shredProperty": "UNSTRUCT_EVENT"},
        headers={"Authorization": "Bearer nope"},
    )
    expected = (response.status_code, list(rig.columns()))
    assert expected == (401, before)


def test_http_unknown_schema_answers_404(rig: MutatorRig) -> None:
    """A schema in no repository gets 404."""
    response = api(rig).post(
        "/v1/columns",
        json={"schema": "iglu:com.acme/absent/jsonschema/1-0-0", "shredProperty": "CONTEXTS"},
        headers=AUTH,
    )
    expected = 404
    assert expected == response.status_code


def test_registry_down_then_up_redelivers_until_added(rig: MutatorRig) -> None:
    """While the registry fails the message is nacked; once it is back the column appears."""
    rig.registry.add(CLICK, object_schema({"targetUrl": {"type": "string"}}))
    rig.registry.failing = True
    rig.start_listener(retry_delay=0.2)
    rig.publish(encode_types([EntityType(CLICK, ShredProperty.UNSTRUCT_EVENT)]))
    failures = rig.metrics.errors.labels("listener", "registry")
    assert wait_for(lambda: failures._value.get() >= 1, 20), (
        "timed out waiting for a nack while the registry fails"
    )
    rig.registry.failing = False
    assert wait_for(lambda: "unstruct_event_com_acme_link_click_1_0_0" in rig.columns(), 20), (
        "timed out waiting for the column"
    )
    expected = "RECORD"
    assert expected == rig.columns()["unstruct_event_com_acme_link_click_1_0_0"].type.value


def test_listener_adds_what_it_can_and_acks_the_rest(rig: MutatorRig) -> None:
    """Next to an illegal name and a type past 10,000 leaf fields, the good type is added once.

    The table is filled to one leaf field short of BigQuery's limit; one message names a
    three-field context (too wide), a column whose name passes 300 characters, and a
    one-field event. The good column lands, the message is handled on its first delivery
    (the old code nacked it forever), and each failure is counted by its kind.
    """
    wide = SchemaKey.parse("iglu:com.acme/wide/jsonschema/1-0-0")
    long_vendor = SchemaKey.parse(f"iglu:com.{'v' * 300}/thing/jsonschema/1-0-0")
    rig.registry.add(wide, object_schema({k: {"type": "string"} for k in ("x", "y", "z")}))
    rig.registry.add(long_vendor, object_schema({"a": {"type": "string"}}))
    rig.registry.add(CLICK, object_schema({"targetUrl": {"type": "string"}}))
    table = rig.bq.get_table(rig.table_ref)
    room = MAX_LEAF_FIELDS - leaf_count(Field.from_api(f.to_api_repr()) for f in table.schema)
    filler = [bigquery.SchemaField(f"f{i}", "STRING") for i in range(room - 1)]
    table.schema = [*table.schema, bigquery.SchemaField("filler", "RECORD", fields=filler)]
    rig.bq.update_table(table, ["schema"])
    rig.start_listener()
    rig.publish(
        encode_types(
            [
                EntityType(wide, ShredProperty.CONTEXTS),
                EntityType(long_vendor, ShredProperty.UNSTRUCT_EVENT),
                EntityType(CLICK, ShredProperty.UNSTRUCT_EVENT),
            ]
        )
    )
    received = rig.metrics.types_received.labels("listener")
    assert wait_for(lambda: received._value.get() >= 3, 30), (
        "timed out waiting for the message handled"
    )
    errors = {
        kind: rig.metrics.errors.labels("listener", kind)._value.get()
        for kind in ("column_limit", "illegal_name")
    }
    expected = (3, {"column_limit": 1, "illegal_name": 1}, True, MAX_LEAF_FIELDS)
    columns = rig.columns()
    assert expected == (
        received._value.get(),
        errors,
        "unstruct_event_com_acme_link_click_1_0_0" in columns,
        leaf_count(columns.values()),
    )
