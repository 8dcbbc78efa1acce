"""Readiness: does a stand-in answer a real request of its official client?

Pub/Sub is asked ListTopics, BigQuery datasets.list, Cloud Storage buckets.list, each on
a fresh client with a one-second deadline.
"""

from __future__ import annotations

from collections.abc import Callable

import grpc
from google.api_core.exceptions import GoogleAPIError
from google.api_core.retry import Retry
from plowline_cloud.clients import bigquery_client, publisher_client, storage_client

from plowline_devstack.endpoints import Endpoints
from plowline_devstack.stack.servers import BIGQUERY, PUBSUB, STORAGE

_PROBE_TIMEOUT = 1.0


def answers(name: str, endpoints: Endpoints) -> bool:
    """Return True when server ``name`` answers a real client request."""
    try:
        _PROBES[name](endpoints)
    except (GoogleAPIError, OSError, grpc.RpcError):
        return False
    return True


def _probe_pubsub(endpoints: Endpoints) -> None:
    client = publisher_client(endpoints.pubsub_target)
    try:
        client.list_topics(
            request={"project": f"projects/{endpoints.project}"}, timeout=_PROBE_TIMEOUT, retry=None
        )
    finally:
        client.transport.close()


def _probe_bigquery(endpoints: Endpoints) -> None:
    with bigquery_client(endpoints.project, endpoints.bigquery_url) as client:
        retry = Retry(deadline=_PROBE_TIMEOUT)
        list(client.list_datasets(max_results=1, retry=retry, timeout=_PROBE_TIMEOUT))


def _probe_storage(endpoints: Endpoints) -> None:
    client = storage_client(endpoints.project, endpoints.storage_url)
    list(client.list_buckets(max_results=1, timeout=_PROBE_TIMEOUT, retry=None))


_PROBES: dict[str, Callable[[Endpoints], None]] = {
    PUBSUB: _probe_pubsub,
    BIGQUERY: _probe_bigquery,
    STORAGE: _probe_storage,
}
