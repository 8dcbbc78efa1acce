"""Create what a :class:`~plowline_devstack.stack.config.StackConfig` describes, with the official clients.

Notes:
    Idempotent: what exists is left as it is, so ``plowline dev up`` may run it again on a
    running stack. The events table gets ``plowline_core.event.fields.ATOMIC_COLUMNS``
    (``table_layout`` 2.x: loader 2.x's table, partitioned and clustered as 2.x makes it).
"""

from __future__ import annotations

import contextlib

from google.api_core.exceptions import AlreadyExists, Conflict
from google.cloud import bigquery
from plowline_cloud.clients import (
    bigquery_client,
    publisher_client,
    storage_client,
    subscriber_client,
)
from plowline_core.event.fields import (
    ATOMIC_COLUMNS,
    V2_ATOMIC_COLUMNS,
    V2_CLUSTER_BY,
    V2_PARTITION_COLUMN,
)

from plowline_devstack.bigquery_retry import BIGQUERY_RETRY
from plowline_devstack.endpoints import Endpoints
from plowline_devstack.stack.config import StackConfig, load_config

__all__ = [
    "StackConfig",
    "load_config",
    "provision",
    "provision_bigquery",
    "provision_pubsub",
    "provision_storage",
]

_TIMEOUT = 10.0


def provision(config: StackConfig, endpoints: Endpoints, *, pubsub: bool = True) -> None:
    """Create every resource of ``config`` that does not exist yet."""
    if pubsub:
        provision_pubsub(config, endpoints)
    provision_bigquery(config, endpoints)
    provision_storage(config, endpoints)


def provision_pubsub(config: StackConfig, endpoints: Endpoints) -> None:
    """Create the topics and subscriptions."""
    publisher = publisher_client(endpoints.pubsub_target)
    for topic in config.topics:
        with contextlib.suppress(AlreadyExists):
            publisher.create_topic(
                name=publisher.topic_path(config.project, topic), timeout=_TIMEOUT
            )
    subscriber = subscriber_client(endpoints.pubsub_target)
    with subscriber:
        for name, topic in config.subscriptions.items():
            with contextlib.suppress(AlreadyExists):
                subscriber.create_subscription(
                    name=subscriber.subscription_path(config.project, name),
                    topic=publisher.topic_path(config.project, topic),
                    timeout=_TIMEOUT,
                )
    publisher.transport.close()


def provision_bigquery(config: StackConfig, endpoints: Endpoints) -> None:
    """Create the dataset and the events table with the atomic columns (2.x's table for 2.x)."""
    client = bigquery_client(endpoints.project, endpoints.bigquery_url)
    v2 = config.table_layout == "2.x"
    with client:
        dataset = bigquery.Dataset(f"{config.project}.{config.dataset}")
        client.create_dataset(dataset, exists_ok=True, retry=BIGQUERY_RETRY, timeout=_TIMEOUT)
        columns = V2_ATOMIC_COLUMNS if v2 else ATOMIC_COLUMNS
        schema = [bigquery.SchemaField.from_api_repr(column.to_api()) for column in columns]
        table = bigquery.Table(f"{config.project}.{config.dataset}.{config.table}", schema=schema)
        if v2:
            table.time_partitioning = bigquery.TimePartitioning(
                type_=bigquery.TimePartitioningType.DAY, field=V2_PARTITION_COLUMN
            )
            table.clustering_fields = list(V2_CLUSTER_BY)
        client.create_table(table, exists_ok=True, retry=BIGQUERY_RETRY, timeout=_TIMEOUT)


def provision_storage(config: StackConfig, endpoints: Endpoints) -> None:
    """Create the buckets."""
    client = storage_client(endpoints.project, endpoints.storage_url)
    for bucket in config.buckets:
        with contextlib.suppress(Conflict):
            client.create_bucket(bucket, timeout=_TIMEOUT)
