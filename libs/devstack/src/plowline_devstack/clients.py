"""Official Google clients pointed at the local stand-ins (anonymous credentials).

Notes:
    The retry trap: bqemulator answers some errors with HTTP 500, which the BigQuery
    client's ``DEFAULT_RETRY`` retries for 600 s. Every BigQuery call made here passes
    :data:`BIGQUERY_RETRY` and, for jobs, ``job_retry=None``.
"""

from __future__ import annotations

import grpc
from google.api_core.client_options import ClientOptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import bigquery
from google.cloud.bigquery.retry import DEFAULT_RETRY
from google.cloud.pubsub_v1 import (  # type: ignore[import-untyped]  # ships no py.typed
    PublisherClient,
    SubscriberClient,
)
from google.cloud.storage import Client as StorageClient  # type: ignore[import-untyped]  # no py.typed
from google.pubsub_v1.services.publisher.transports import PublisherGrpcTransport
from google.pubsub_v1.services.subscriber.transports import SubscriberGrpcTransport

from plowline_devstack.endpoints import Endpoints

BIGQUERY_RETRY = DEFAULT_RETRY.with_deadline(10.0)
"""Retry for BigQuery calls against the emulator: short, so one bad call cannot hang."""


def bigquery_client(endpoints: Endpoints) -> bigquery.Client:
    """Return a BigQuery client for the local emulator's REST API."""
    return bigquery.Client(
        project=endpoints.project,
        credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
        client_options=ClientOptions(api_endpoint=endpoints.bigquery_url),
    )


def storage_client(endpoints: Endpoints) -> StorageClient:
    """Return a Cloud Storage client for the local emulator."""
    return StorageClient(
        project=endpoints.project,
        credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
        client_options=ClientOptions(api_endpoint=endpoints.storage_url),
    )


def publisher_client(endpoints: Endpoints) -> PublisherClient:
    """Return a Pub/Sub publisher on an insecure channel to the local emulator."""
    return emulator_publisher(endpoints.pubsub_target)


def emulator_publisher(target: str) -> PublisherClient:
    """Return a Pub/Sub publisher on an insecure channel to the emulator at ``host:port``."""
    channel = grpc.insecure_channel(target)
    return PublisherClient(transport=PublisherGrpcTransport(channel=channel))


def subscriber_client(endpoints: Endpoints) -> SubscriberClient:
    """Return a Pub/Sub subscriber on an insecure channel to the local emulator."""
    channel = grpc.insecure_channel(endpoints.pubsub_target)
    return SubscriberClient(transport=SubscriberGrpcTransport(channel=channel))
