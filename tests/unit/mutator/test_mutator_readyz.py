"""The mutator's /readyz names the Iglu registries it cannot reach; the listener does not log per message."""

from __future__ import annotations

import threading
import warnings
from datetime import UTC, datetime
from typing import Any

from plowline_cloud.pubsub.streaming import PubSubReceivedMessage
from plowline_core.iglu.config import HttpConnection, RepositoryRef
from plowline_core.iglu.key import SchemaKey
from plowline_core.iglu.resolver import Resolver
from plowline_core.messages import encode_types
from plowline_core.schema.entity import ColumnMode, EntityType, ShredProperty
from plowline_core.schema.field import Field, FieldType, Mode
from plowline_core.testing.clock import FixedClock
from plowline_core.testing.registry import InMemoryRegistry
from plowline_core.testing.table import InMemoryTableSchemaStore
from plowline_mutator.api import ApiContext, create_app
from plowline_mutator.listener import TypesListener
from plowline_mutator.metrics import MutatorMetrics
from plowline_mutator.mutation import Mutator
from starlette.exceptions import StarletteDeprecationWarning
from structlog.testing import capture_logs

with warnings.catch_warnings():
    # Starlette asks for the httpx2 package, which is not installed; httpx works.
    warnings.simplefilter("ignore", StarletteDeprecationWarning)
    from fastapi.testclient import TestClient

URI = "iglu:com.acme/link_click/jsonschema/1-0-0"


def _client(registry: InMemoryRegistry) -> TestClient:
    ref = RepositoryRef(registry.name, 0, (), HttpConnection("https://iglu.acme.com"))
    resolver = Resolver([(ref, registry)], FixedClock(datetime(2026, 1, 1, tzinfo=UTC)), 0)
    store = InMemoryTableSchemaStore([Field("event_id", FieldType.STRING, Mode.REQUIRED)])
    mutator = Mutator(resolver, store, ColumnMode.FULL, threading.Lock())

    def registries() -> list[dict[str, Any]]:
        return [outage.to_json() for outage in resolver.outages.current()]

    context = ApiContext(mutator, store, MutatorMetrics(), None, lambda: True, registries)
    return TestClient(create_app(context))


def test_readyz_names_a_failing_registry_with_its_error() -> None:
    """After a lookup fails, /readyz lists the registry, since when and its last error."""
    registry = InMemoryRegistry("acme", failing=True)
    client = _client(registry)
    client.get("/v1/columns/preview", params={"schema": URI, "shredProperty": "CONTEXTS"})
    expected = {
        "ready": True,
        "registries": [
            {
                "repository": "acme",
                "since": "2026-01-01T00:00:00.000Z",
                "lastFailure": "2026-01-01T00:00:00.000Z",
                "lastError": "acme is failing (test double)",
                "failures": 1,
            }
        ],
    }
    assert expected == client.get("/readyz").json()


def test_readyz_lists_no_registry_once_it_answers_again() -> None:
    """The registry's next answer removes it from /readyz."""
    registry = InMemoryRegistry("acme", failing=True)
    client = _client(registry)
    params = {"schema": URI, "shredProperty": "CONTEXTS"}
    client.get("/v1/columns/preview", params=params)
    registry.failing = False
    client.get("/v1/columns/preview", params=params)
    expected: dict[str, Any] = {"ready": True, "registries": []}
    assert expected == client.get("/readyz").json()


def test_the_listener_logs_no_warning_per_message_during_an_outage() -> None:
    """Ten types messages nacked for one registry outage add no warning each (the outage logs)."""
    registry = InMemoryRegistry("acme", failing=True)
    ref = RepositoryRef(registry.name, 0, (), HttpConnection("https://iglu.acme.com"))
    resolver = Resolver([(ref, registry)], FixedClock(datetime(2026, 1, 1, tzinfo=UTC)), 0)
    store = InMemoryTableSchemaStore([Field("event_id", FieldType.STRING, Mode.REQUIRED)])
    mutator = Mutator(resolver, store, ColumnMode.FULL, threading.Lock())
    listener = TypesListener(mutator, MutatorMetrics(), wait=lambda _: None)
    data = encode_types([EntityType(SchemaKey.parse(URI), ShredProperty.CONTEXTS)])
    nacked: list[str] = []
    with capture_logs() as logs:
        for n in range(10):
            listener(_delivery(data, n, nacked))
    expected = (10, [])
    assert expected == (len(nacked), [log for log in logs if log["log_level"] == "warning"])


def _delivery(data: bytes, n: int, nacked: list[str]) -> PubSubReceivedMessage:
    return PubSubReceivedMessage(
        data=data,
        attributes={},
        message_id=f"m-{n}",
        publish_time=datetime(2026, 1, 1, tzinfo=UTC),
        delivery_attempt=None,
        ack_id=f"a-{n}",
        on_ack=lambda: None,
        on_nack=lambda: nacked.append(f"m-{n}"),
        on_extend=lambda seconds: None,
    )
