"""Fixtures for the cloud adapters' integration tests: the local stack and fresh resources.

The stack comes from the session fixture ``local_stack`` (tests/integration/conftest.py)
when it exists; otherwise this directory starts its own with ``plowline_devstack``.
Every test gets its own table, topic or object prefix so tests stay independent.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from google.cloud import bigquery
from plowline_cloud.clients import (
    bigquery_client,
    publisher_client,
    storage_client,
    subscriber_client,
)
from plowline_devstack.endpoints import Endpoints

DATASET = "snowplow"
BUCKET = "plowline-dead-end"


def _endpoints_of(stack: Any) -> Endpoints:
    return stack if isinstance(stack, Endpoints) else stack.endpoints


@pytest.fixture(scope="session")
def cloud_endpoints(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Endpoints]:
    """Where the local Pub/Sub, BigQuery and Cloud Storage stand-ins listen."""
    try:
        yield _endpoints_of(request.getfixturevalue("local_stack"))
        return
    except pytest.FixtureLookupError:
        pass
    from plowline_devstack.stack import start_stack

    stack = start_stack(Path(tmp_path_factory.mktemp("cloud-stack")), persistent=False)
    try:
        yield stack.endpoints
    finally:
        stack.stop()


@pytest.fixture(scope="session")
def bq(cloud_endpoints: Endpoints) -> bigquery.Client:
    """A BigQuery client on the local bqemulator."""
    return bigquery_client(cloud_endpoints.project, cloud_endpoints.bigquery_url)


@pytest.fixture(scope="session")
def gcs(cloud_endpoints: Endpoints) -> Any:
    """A Cloud Storage client on the local gcp-storage-emulator."""
    return storage_client(cloud_endpoints.project, cloud_endpoints.storage_url)


@pytest.fixture(scope="session")
def publisher(cloud_endpoints: Endpoints) -> Any:
    """A PublisherClient on the local Pub/Sub emulator."""
    return publisher_client(cloud_endpoints.pubsub_target)


@pytest.fixture(scope="session")
def subscriber(cloud_endpoints: Endpoints) -> Iterator[Any]:
    """A SubscriberClient on the local Pub/Sub emulator."""
    client = subscriber_client(cloud_endpoints.pubsub_target)
    yield client
    client.close()


@dataclass(frozen=True)
class Channel:
    """A fresh topic and its one subscription."""

    topic: str
    subscription: str


@pytest.fixture
def channel(cloud_endpoints: Endpoints, publisher: Any, subscriber: Any) -> Channel:
    """A topic and subscription under unique names."""
    suffix = uuid.uuid4().hex[:12]
    topic = publisher.topic_path(cloud_endpoints.project, f"cloud-{suffix}")
    subscription = subscriber.subscription_path(cloud_endpoints.project, f"cloud-{suffix}")
    publisher.create_topic(name=topic)
    subscriber.create_subscription(name=subscription, topic=topic, ack_deadline_seconds=30)
    return Channel(topic, subscription)


@pytest.fixture
def table_id(cloud_endpoints: Endpoints, bq: bigquery.Client) -> Iterator[str]:
    """A unique table name in the provisioned dataset (dropped after the test)."""
    name = f"{cloud_endpoints.project}.{DATASET}.cloud_{uuid.uuid4().hex[:12]}"
    yield name
    bq.delete_table(name, not_found_ok=True)


@pytest.fixture
def blob_prefix() -> str:
    """A unique object prefix in the provisioned dead-end bucket."""
    return f"cloud-tests/{uuid.uuid4().hex[:12]}"
