"""The mutator's types listener with Pub/Sub refusing acks (``acknowledge-unavailable``).

A Pub/Sub emulator of its own answers half of the Acknowledge and ModifyAckDeadline calls
with UNAVAILABLE (nothing applied), in short outages; the listener reads the types topic
from it and widens a fresh table of the session stack's BigQuery. A types message whose
ack was lost comes back: adding its columns again must change nothing and fail nothing.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from plowline_cloud.bigquery import BigQueryTableSchemaStore, create_events_table
from plowline_cloud.clients import bigquery_client, publish_api_client, subscriber_client
from plowline_cloud.clock import SystemClock
from plowline_cloud.pubsub.publisher import PubSubPublisher
from plowline_cloud.pubsub.streaming import PubSubSubscriber
from plowline_core.event.fields import ATOMIC_COLUMNS
from plowline_core.iglu.config import HttpConnection, RepositoryRef
from plowline_core.iglu.key import SchemaKey
from plowline_core.iglu.resolver import Resolver
from plowline_core.messages import encode_types
from plowline_core.schema.entity import ColumnMode, EntityType, ShredProperty
from plowline_core.testing.clock import FixedClock
from plowline_core.testing.registry import InMemoryRegistry
from plowline_devstack.faults.pubsub import PubSubFaults
from plowline_devstack.pubsub import PubSubEmulator, started_with_faults
from plowline_devstack.stack.lifecycle import LocalStack
from plowline_mutator.listener import TypesListener
from plowline_mutator.metrics import MutatorMetrics
from plowline_mutator.mutation import Mutator
from support.timing import wait_for

TYPES = 20
ACK_DEADLINE_S = 10


@pytest.fixture
def refusing() -> Iterator[tuple[PubSubEmulator, PubSubFaults]]:
    """A Pub/Sub emulator refusing half the ack calls, each refusal a 2 s outage."""
    plan = {"seed": 2, "pubsub": {"acknowledge-unavailable": {"rate": 0.5, "seconds": 2}}}
    with started_with_faults(plan) as started:
        yield started


def test_every_type_gets_its_column_while_acks_are_refused(
    local_stack: LocalStack, refusing: tuple[PubSubEmulator, PubSubFaults]
) -> None:
    """20 new types in 10 messages, half the ack calls refused: 20 columns, no error."""
    emulator, faults = refusing
    suffix = uuid.uuid4().hex[:10]
    bq = bigquery_client(local_stack.project, local_stack.endpoints.bigquery_url)
    table_ref = f"{local_stack.project}.{local_stack.dataset}.events_{suffix}"
    create_events_table(bq, table_ref, ATOMIC_COLUMNS)
    registry = InMemoryRegistry("mem")
    keys = [SchemaKey.parse(f"iglu:com.acme.acks/type_{i}/jsonschema/1-0-0") for i in range(TYPES)]
    for key in keys:
        registry.add(key, {"type": "object", "properties": {"n": {"type": "integer"}}})
    resolver = Resolver(
        [(RepositoryRef("mem", 0, (), HttpConnection("http://127.0.0.1:1")), registry)],
        FixedClock(datetime(2026, 1, 1, tzinfo=UTC)),
        cache_size=0,
    )
    store = BigQueryTableSchemaStore(bq, table_ref, 60.0, SystemClock())
    metrics = MutatorMetrics()
    mutator = Mutator(resolver, store, ColumnMode.FULL, threading.Lock())
    topic = f"projects/{local_stack.project}/topics/types-{suffix}"
    subscription = f"projects/{local_stack.project}/subscriptions/types-mutator-{suffix}"
    pub_client = publish_api_client(emulator.endpoint)
    sub_client = subscriber_client(emulator.endpoint)
    pub_client.create_topic(name=topic)
    sub_client.create_subscription(
        name=subscription, topic=topic, ack_deadline_seconds=ACK_DEADLINE_S
    )
    subscriber = PubSubSubscriber(sub_client, subscription, callback_threads=2)
    subscriber.start(TypesListener(mutator, metrics, retry_delay=0.2))
    types = [EntityType(key, ShredProperty.CONTEXTS) for key in keys]
    PubSubPublisher(pub_client, topic).publish(
        [encode_types(types[i : i + 2]) for i in range(0, TYPES, 2)]
    )
    wanted = {f"contexts_com_acme_acks_type_{i}_1_0_0" for i in range(TYPES)}
    assert wait_for(lambda: wanted <= {f.name for f in bq.get_table(table_ref).schema}, 60), (
        "timed out waiting for the columns"
    )
    time.sleep(ACK_DEADLINE_S + 3)  # a lost ack's message comes back after its deadline
    running = subscriber.running
    subscriber.stop(90)  # its last acks and nacks are retried through the outages
    columns = {f.name for f in bq.get_table(table_ref).schema} - {c.name for c in ATOMIC_COLUMNS}
    errors = sum(
        sample.value
        for sample in metrics.errors.collect()[0].samples
        if sample.name.endswith("_total")  # not the _created stamps of the series born at 0
    )

    assert (columns, errors, running, faults.acks_refused > 0) == (wanted, 0, True, True)
