"""Pull from one subscription on demand and settle by ack id: pull, ack, modack, nack.

The loader's Spark source pulls through this (``plowline_loader.source``): unary Pull, the
messages as plain ``PulledMessage`` values, settled later, by ack id, from another task.

Notes:
    ``SubscriberClient`` is neither picklable nor cheap, so every Python process (the
    loader's driver-side reader process, each executor Python worker) builds one per
    endpoint on first use and keeps it (``subscriber_for``). Partition descriptors carry the endpoint,
    never a client. A forked child rebuilds its client: gRPC channels do not survive fork.
    Google errors leave this module as plowline errors (``TransientError`` and so on),
    transient ones only after each call retried them for ``RETRY_FOR_S``.
    Requests are raw protobuf messages in their proto-plus wrapper (``_request``): from a
    dict, proto-plus converts every ack id on its own, ~1.6 µs each, paid at
    receipt, on every lease extension and at the ack.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, TypeVar

from google.api_core import exceptions as gexc
from google.api_core import retry as gretry
from google.pubsub_v1 import SubscriberClient
from google.pubsub_v1.types import (
    AcknowledgeRequest,
    ModifyAckDeadlineRequest,
    PullRequest,
    PullResponse,
)

from plowline_cloud.clients import subscribe_api_client
from plowline_cloud.errors import translated
from plowline_cloud.per_process import PerProcess
from plowline_cloud.pubsub.pulled import PulledMessage

# Pub/Sub takes at most 1000 messages per pull; ack/modack requests stay well under the
# 512 KiB request limit at this many ids.
MAX_PULL = 1000
_ID_CHUNK = 1000
_RPC_TIMEOUT_S = 30.0
RETRY_FOR_S = 30.0
"""How long one call retries transient errors (backoff 0.1 s doubling to 2 s) before it
raises ``TransientError``; what the loader then does is in ``plowline_loader.source.pubsub_source``."""
_TRANSIENT = (
    gexc.ServiceUnavailable,
    gexc.Aborted,
    gexc.InternalServerError,
    gexc.Unknown,
    gexc.ResourceExhausted,
)


def _retry(*transient: type[Exception]) -> gretry.Retry:
    return gretry.Retry(
        predicate=gretry.if_exception_type(*transient),
        initial=0.1,
        maximum=2.0,
        multiplier=2.0,
        timeout=RETRY_FOR_S,
    )


# Acknowledge and ModifyAckDeadline are idempotent: a call that timed out is sent again.
_RETRY = _retry(*_TRANSIENT, gexc.DeadlineExceeded)
# A Pull whose long poll ends DEADLINE_EXCEEDED found nothing: that is an answer, not retried.
_PULL_RETRY = _retry(*_TRANSIENT)

_Request = TypeVar("_Request", PullRequest, AcknowledgeRequest, ModifyAckDeadlineRequest)
subscriber_for: PerProcess[str | None, SubscriberClient] = PerProcess(subscribe_api_client)
"""This process's SubscriberClient for an emulator's ``host:port`` (None: Google).

The Subscriber API's GAPIC client (``plowline_cloud.clients.subscribe_api_client``), not
the streaming one: importing only it saves every Spark Python worker ~1.5 s."""


def _chunks(ids: Sequence[str]) -> Iterator[Sequence[str]]:
    for start in range(0, len(ids), _ID_CHUNK):
        yield ids[start : start + _ID_CHUNK]


class Subscription:
    """Pull from and settle deliveries of one subscription through the official client."""

    def __init__(self, path: str, emulator_host: str | None) -> None:
        self.path = path
        self._client = subscriber_for(emulator_host)

    def pull(self, max_messages: int, timeout_s: float) -> list[PulledMessage]:
        """Pull up to ``max_messages``, waiting at most ``timeout_s``; empty when none came.

        Notes:
            A refused Pull leases nothing, so retrying it is safe: transient refusals
            (UNAVAILABLE, ABORTED, INTERNAL, UNKNOWN, RESOURCE_EXHAUSTED) are retried for
            up to ``RETRY_FOR_S``, then raised as ``TransientError``.
        """
        request = _request(
            PullRequest, subscription=self.path, max_messages=min(max_messages, MAX_PULL)
        )
        with translated("pubsub.pull"):
            try:
                response = self._client.pull(request=request, retry=_PULL_RETRY, timeout=timeout_s)
            except gexc.DeadlineExceeded:
                # A long poll that found nothing may end so: that means "no messages".
                return []
        return _pulled_all(PullResponse.pb(response).received_messages, self.path)

    def ack(self, ack_ids: Sequence[str]) -> None:
        """Acknowledge ``ack_ids`` for good (unknown or expired ids are ignored by Pub/Sub)."""
        for chunk in _chunks(ack_ids):
            request = _request(AcknowledgeRequest, subscription=self.path, ack_ids=chunk)
            with translated("pubsub.acknowledge"):
                self._client.acknowledge(request=request, retry=_RETRY, timeout=_RPC_TIMEOUT_S)

    def modack(self, ack_ids: Sequence[str], seconds: int) -> None:
        """Set the ack deadline of ``ack_ids`` to now + ``seconds`` (0 redelivers at once)."""
        for chunk in _chunks(ack_ids):
            request = _request(
                ModifyAckDeadlineRequest,
                subscription=self.path,
                ack_ids=chunk,
                ack_deadline_seconds=seconds,
            )
            with translated("pubsub.modify_ack_deadline"):
                self._client.modify_ack_deadline(
                    request=request, retry=_RETRY, timeout=_RPC_TIMEOUT_S
                )

    def nack(self, ack_ids: Sequence[str]) -> None:
        """Hand ``ack_ids`` back to Pub/Sub for immediate redelivery."""
        self.modack(ack_ids, 0)


def _request(kind: type[_Request], **fields: object) -> _Request:
    """Return a ``kind`` request built as raw protobuf (repeated fields copied in C)."""
    wrapped: _Request = kind.wrap(kind.pb()(**fields))
    return wrapped


def _pulled_all(received: Iterable[Any], subscription: str) -> list[PulledMessage]:
    """Return the pulled messages as plain values, in the order received.

    Notes:
        Raw protobuf access: proto-plus wrappers cost several microseconds per field, and
        so does iterating an empty attribute map (most messages have none). One loop,
        each tuple made by ``tuple.__new__`` (the named tuple's ``__new__`` is a Python
        function): ~0.9 µs a message instead of 1.1.
    """
    make = tuple.__new__
    pulled: list[PulledMessage] = []
    append = pulled.append
    for one in received:
        message = one.message
        stamp = message.publish_time
        attributes = message.attributes
        append(
            make(
                PulledMessage,
                (
                    one.ack_id,
                    subscription,
                    message.message_id,
                    stamp.seconds * 1_000_000 + stamp.nanos // 1000,
                    message.data,
                    tuple(attributes.items()) if attributes else (),
                ),
            )
        )
    return pulled
