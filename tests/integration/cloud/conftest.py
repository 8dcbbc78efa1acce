"""Fixtures for the cloud adapters' integration tests: the local stack and fresh resources.

The stack comes from the session fixture ``local_stack`` (tests/integration/conftest.py)
when it exists; otherwise this directory starts its own with ``plowline_devstack``.
Every test gets its own table, topic or object prefix so tests stay independent.
"""

from __future__ import annotations

import http.client
import http.server
import threading
import urllib.parse
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
    from plowline_devstack.stack.lifecycle import start_stack

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


class StorageProxy:
    """An HTTP proxy in front of the storage stand-in that fails the way Google can.

    ``lose_uploads``: how many object uploads are forwarded and applied, but answered by a
    dropped connection (the response lost). ``forbid_reads``: every read (object or bucket
    metadata) answers 403, as under ``roles/storage.objectCreator``. ``seen`` records each request's method and path.
    """

    def __init__(self, upstream: str) -> None:
        self.upstream = urllib.parse.urlsplit(upstream)
        self.lose_uploads = 0
        self.forbid_reads = False
        self.seen: list[tuple[str, str]] = []
        proxy = self

        class _Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def _forward(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                proxy.seen.append((self.command, self.path))
                if proxy.forbid_reads and self.command in ("GET", "HEAD"):
                    self._answer(
                        403, b'{"error": {"code": 403, "message": "storage.objects.get denied"}}'
                    )
                    return
                upstream = http.client.HTTPConnection(
                    proxy.upstream.hostname, proxy.upstream.port, timeout=30
                )
                headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                upstream.request(self.command, self.path, body=body, headers=headers)
                reply = upstream.getresponse()
                content = reply.read()
                upstream.close()
                if self.command == "POST" and "uploadType" in self.path and proxy.lose_uploads:
                    proxy.lose_uploads -= 1
                    self.close_connection = True
                    return
                self._answer(reply.status, content, reply.getheader("Content-Type"))

            def _answer(self, status: int, content: bytes, kind: str | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind or "application/json")
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)

            # http.server dispatches on these names (its spelling, not ours).
            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _forward  # noqa: N815

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop serving."""
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def storage_proxy(cloud_endpoints: Endpoints) -> Iterator[StorageProxy]:
    """A proxy to the storage stand-in that can lose upload responses and refuse reads."""
    proxy = StorageProxy(cloud_endpoints.storage_url)
    yield proxy
    proxy.close()
