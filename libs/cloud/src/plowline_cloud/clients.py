"""Build the official Google clients from explicit endpoints (for composition roots).

Notes:
    No endpoint comes from the environment: a composition root passes the emulator endpoint
    it was configured with, or ``None`` to talk to Google with default credentials.
    Pointed at a local endpoint, clients use ``AnonymousCredentials`` (and, for Pub/Sub,
    an insecure gRPC channel), as the local stand-ins expect (see docs/local-stack.md).
    Each client's package is imported by the function that builds it, so importing this
    module costs nothing and a process loads only the clients it builds.
    The BigQuery client's HTTP session reads the proxy and CA-bundle variables once per
    endpoint (``read_environment_once``), not on every request.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from google.auth.credentials import AnonymousCredentials, Credentials

if TYPE_CHECKING:
    from collections.abc import MutableMapping

    import google.cloud.pubsub_v1 as pubsub_v1  # type: ignore[import-untyped]  # no py.typed
    import google.cloud.storage as storage  # type: ignore[import-untyped]  # no py.typed
    import google.pubsub_v1 as gapic_pubsub
    import grpc
    import requests
    from google.cloud import bigquery

GRPC_OPTIONS = (
    ("grpc.max_send_message_length", -1),
    ("grpc.max_receive_message_length", -1),
)
"""Every gRPC channel plowline opens: unlimited message sizes, for Pub/Sub's 10 MB messages
plus framing, a 1000-message pull response and a Write API append (gRPC's default is 4 MiB)."""


def emulator_channel(host: str) -> grpc.Channel:
    """Return an insecure gRPC channel to a local stand-in at ``host:port`` (``http://`` accepted)."""
    import grpc

    return grpc.insecure_channel(_strip_scheme(host), options=GRPC_OPTIONS)


def _strip_scheme(host: str) -> str:
    return host.split("://", 1)[1] if "://" in host else host


def _with_scheme(endpoint: str) -> str:
    return endpoint if "://" in endpoint else f"http://{endpoint}"


def publisher_client(
    emulator_host: str | None = None,
    *,
    credentials: Credentials | None = None,
    batch_settings: pubsub_v1.types.BatchSettings | None = None,
) -> pubsub_v1.PublisherClient:
    """Return a PublisherClient for Google (default credentials) or an emulator at ``host:port``."""
    import google.cloud.pubsub_v1 as pubsub_v1
    from google.pubsub_v1.services.publisher.transports.grpc import PublisherGrpcTransport

    settings = batch_settings or pubsub_v1.types.BatchSettings()
    if emulator_host:
        channel = emulator_channel(emulator_host)
        return pubsub_v1.PublisherClient(
            batch_settings=settings, transport=PublisherGrpcTransport(channel=channel)
        )
    return pubsub_v1.PublisherClient(batch_settings=settings, credentials=credentials)


def publish_api_client(emulator_host: str | None = None) -> gapic_pubsub.PublisherClient:
    """Return the Publisher API's GAPIC client (for ``pubsub.publisher``), on Google or an emulator."""
    from google.pubsub_v1 import PublisherClient
    from google.pubsub_v1.services.publisher.transports.grpc import PublisherGrpcTransport

    if emulator_host:
        channel = emulator_channel(emulator_host)
    else:
        channel = PublisherGrpcTransport.create_channel(options=GRPC_OPTIONS)
    return PublisherClient(transport=PublisherGrpcTransport(channel=channel))


def subscribe_api_client(emulator_host: str | None = None) -> gapic_pubsub.SubscriberClient:
    """Return the Subscriber API's GAPIC client (sync pull, ack, modack), on Google or an emulator.

    Notes:
        The official client's GAPIC layer: ``google.cloud.pubsub_v1.SubscriberClient``
        subclasses it, adding only streaming pull and the PUBSUB_EMULATOR_HOST lookup.
    """
    from google.pubsub_v1 import SubscriberClient
    from google.pubsub_v1.services.subscriber.transports.grpc import SubscriberGrpcTransport

    if emulator_host:
        channel = emulator_channel(emulator_host)
    else:
        channel = SubscriberGrpcTransport.create_channel(options=GRPC_OPTIONS)
    return SubscriberClient(transport=SubscriberGrpcTransport(channel=channel))


def subscriber_client(
    emulator_host: str | None = None, *, credentials: Credentials | None = None
) -> pubsub_v1.SubscriberClient:
    """Return a SubscriberClient for Google (default credentials) or an emulator at ``host:port``."""
    import google.cloud.pubsub_v1 as pubsub_v1
    from google.pubsub_v1.services.subscriber.transports.grpc import SubscriberGrpcTransport

    if emulator_host:
        channel = emulator_channel(emulator_host)
        return pubsub_v1.SubscriberClient(transport=SubscriberGrpcTransport(channel=channel))
    return pubsub_v1.SubscriberClient(credentials=credentials)


def bigquery_client(
    project: str,
    api_endpoint: str | None = None,
    *,
    credentials: Credentials | None = None,
    location: str | None = None,
) -> bigquery.Client:
    """Return a BigQuery client; ``api_endpoint`` (``http://127.0.0.1:9050``) selects an emulator."""
    from google.cloud import bigquery

    if api_endpoint:
        client = bigquery.Client(
            project=project,
            credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
            client_options={"api_endpoint": _with_scheme(api_endpoint)},
            location=location,
        )
    else:
        client = bigquery.Client(project=project, credentials=credentials, location=location)
    read_environment_once(client._http)  # the session the client builds for itself
    return client


def read_environment_once(session: requests.Session) -> None:
    """Make ``session`` read the proxy and CA-bundle variables once per endpoint.

    Notes:
        requests' ``Session.merge_environment_settings`` scans the whole environment
        twice on every request (``get_environ_proxies``: which proxies, and whether
        ``NO_PROXY`` bypasses them), ~0.7 CPU-µs an event of the loader's inserts, more
        in a Spark worker's large environment. Here that answer, and
        ``REQUESTS_CA_BUNDLE``/``CURL_CA_BUNDLE``, are read at the first request to a
        scheme and host and kept: the same settings as requests' for an environment
        that does not change afterwards (a variable set later is not seen by this
        session). ``trust_env`` stays honoured (False: nothing is read); netrc and
        redirects are requests' own.
    """
    from requests.sessions import merge_setting
    from requests.utils import get_environ_proxies

    found: dict[tuple[str, str, str | None], tuple[dict[str, str], str | None]] = {}

    def merge_environment_settings(
        url: str,
        proxies: MutableMapping[str, str] | None,
        stream: bool | None,
        verify: bool | str | None,
        cert: str | tuple[str, str] | None,
    ) -> dict[str, Any]:
        if session.trust_env:
            no_proxy = proxies.get("no_proxy") if proxies is not None else None
            scheme, netloc = urlsplit(url)[:2]
            key = (scheme, netloc, no_proxy)
            environment = found.get(key)
            if environment is None:
                bundle = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE")
                environment = found[key] = (get_environ_proxies(url, no_proxy=no_proxy), bundle)
            if proxies is not None:
                for name, proxy in environment[0].items():
                    proxies.setdefault(name, proxy)
            if verify is True or verify is None:
                verify = environment[1] or verify
        return {
            "proxies": merge_setting(proxies, session.proxies),
            "stream": merge_setting(stream, session.stream),
            "verify": merge_setting(verify, session.verify),
            "cert": merge_setting(cert, session.cert),
        }

    session.merge_environment_settings = merge_environment_settings  # type: ignore[method-assign]


def storage_client(
    project: str | None = None,
    api_endpoint: str | None = None,
    *,
    credentials: Credentials | None = None,
) -> storage.Client:
    """Return a Cloud Storage client; ``api_endpoint`` (``http://127.0.0.1:P``) selects an emulator."""
    import google.cloud.storage as storage

    if api_endpoint:
        return storage.Client(
            project=project or "plowline-local",
            credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
            client_options={"api_endpoint": _with_scheme(api_endpoint)},
        )
    if project is None:
        return storage.Client(credentials=credentials)
    return storage.Client(project=project, credentials=credentials)
