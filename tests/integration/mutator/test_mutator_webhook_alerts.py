"""The mutator's setup-error alerts (2.x's monitoring.webhook) reach a receiver on 127.0.0.1.

The listener runs over an in-memory table; the sender is the one ``build_runtime`` starts
(``bootstrap.start_webhook``) and posts to a real HTTP receiver.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from plowline_cloud.metrics import MetricsRegistry
from plowline_cloud.pubsub.streaming import PubSubReceivedMessage
from plowline_core.errors import ConfigError, PermanentError
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
from plowline_core.webhook import ALERT_SCHEMA
from plowline_mutator.bootstrap import start_webhook
from plowline_mutator.listener import TypesListener
from plowline_mutator.metrics import MutatorMetrics
from plowline_mutator.mutation import Mutator
from plowline_mutator.settings import MutatorSettings
from support.webhook import WebhookReceiver, webhook_receiver

ATOMIC = (Field("event_id", FieldType.STRING, Mode.REQUIRED),)
CLICK = EntityType(
    SchemaKey.parse("iglu:com.acme/link_click/jsonschema/1-0-0"), ShredProperty.UNSTRUCT_EVENT
)
SCHEMAS = {CLICK.schema: {"type": "object", "properties": {"a": {"type": "string"}, "b": {}}}}


@pytest.fixture
def received() -> Iterator[WebhookReceiver]:
    """A receiver on 127.0.0.1: its URL and the payloads it got."""
    with webhook_receiver() as receiver:
        yield receiver


def _listener(url: str, table: tuple[Field, ...]) -> tuple[TypesListener, InMemoryTableSchemaStore]:
    registry = InMemoryRegistry("mem", SCHEMAS)
    ref = RepositoryRef("mem", 0, (), HttpConnection("http://127.0.0.1:1"))
    resolver = Resolver([(ref, registry)], FixedClock(datetime(2026, 1, 1, tzinfo=UTC)), 0)
    store = InMemoryTableSchemaStore(table)
    mutator = Mutator(resolver, store, ColumnMode.FULL, threading.Lock())
    settings = MutatorSettings(webhook_endpoint=url, webhook_tags="pipeline=prod")
    sender = start_webhook(settings, MetricsRegistry("mutator"))
    assert sender is not None
    return TypesListener(mutator, MutatorMetrics(), wait=lambda _: None, alerts=sender), store


def _deliver(listener: TypesListener) -> None:
    listener(
        PubSubReceivedMessage(
            data=encode_types([CLICK]), attributes={}, message_id="m-1",
            publish_time=datetime(2026, 1, 1, tzinfo=UTC), delivery_attempt=None, ack_id="a-1",
            on_ack=lambda: None, on_nack=lambda: None, on_extend=lambda seconds: None,
        )
    )  # fmt: skip


def _alerts(received: WebhookReceiver, count: int) -> list[tuple[str, dict[str, str]]]:
    received.wait_for(lambda got: sum(p["schema"] == ALERT_SCHEMA for p in got) >= count)
    time.sleep(0.2)  # no second alert may follow
    return [
        (p["data"]["message"], p["data"]["tags"])
        for p in received.got
        if p["schema"] == ALERT_SCHEMA
    ]


def test_a_table_refusing_columns_alerts_once(received: WebhookReceiver) -> None:
    """BigQuery refusing the patch (PermanentError) twice: one "columns cannot be added" alert."""
    url = received.url
    listener, store = _listener(url, ATOMIC)
    store.fail_with = PermanentError("400 Cannot add fields (field: unstruct_event_x)")  # type: ignore[assignment]

    _deliver(listener)
    _deliver(listener)

    expected = [
        (
            "columns cannot be added to the events table: "
            "400 Cannot add fields (field: unstruct_event_x)",
            {"pipeline": "prod"},
        )
    ]
    assert expected == _alerts(received, 1)


def test_a_table_at_the_column_limit_alerts(received: WebhookReceiver) -> None:
    """A column that would pass BigQuery's leaf-field limit alerts, naming the type."""
    url = received.url
    fillers = tuple(Field(f"c{i}", FieldType.STRING) for i in range(MAX_LEAF_FIELDS - 2))
    listener, _ = _listener(url, (*ATOMIC, *fillers))

    _deliver(listener)

    expected = [
        "columns cannot be added to the events table: UNSTRUCT_EVENT "
        "iglu:com.acme/link_click/jsonschema/1-0-0: "
        f"the table would pass BigQuery's limit of {MAX_LEAF_FIELDS} leaf fields"
    ]
    assert expected == [message for message, _ in _alerts(received, 1)]


def test_the_table_missing_alerts_as_such(received: WebhookReceiver) -> None:
    """A missing table (404) is alerted as the table missing, not as columns."""
    url = received.url
    listener, store = _listener(url, ATOMIC)
    store.fail_with = PermanentError("404 Not found: Table acme:snowplow.events")  # type: ignore[assignment]

    _deliver(listener)

    expected = ["the events table does not exist: 404 Not found: Table acme:snowplow.events"]
    assert expected == [message for message, _ in _alerts(received, 1)]


def test_no_endpoint_starts_no_sender() -> None:
    """Without a webhook endpoint nothing is started (and nothing is sent)."""
    assert start_webhook(MutatorSettings(), MetricsRegistry("mutator")) is None


def test_an_endpoint_that_is_no_url_is_refused_at_start() -> None:
    """An endpoint that is no http(s) URL is a configuration error naming the variables."""
    with pytest.raises(ConfigError, match=r"PLOWLINE_MUTATOR_WEBHOOK_.*not an http"):
        start_webhook(MutatorSettings(webhook_endpoint="ftp://x"), MetricsRegistry("mutator"))
