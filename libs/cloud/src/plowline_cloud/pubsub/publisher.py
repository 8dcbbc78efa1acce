"""Publish to a topic in as few Publish requests as fit, and wait for each: ``PubSubPublisher``.

Every publisher in plowline is this one (the loader's bad rows, failed inserts and types,
the repeater's replay to the failedInserts topic): it sends a batch itself, up to 1,000
messages and 10 MB a request, through the official client's GAPIC ``publish`` method (the
batching client's retry, within one timeout), one request after the other, and returns
once every request returned.

Notes:
    Why not the batching client (CPU per event): it turns every message into a proto-plus
    message and a future, and hands each batch of at most 100 messages (1 MB) to a thread
    of its own that commits it; for the loader's bad rows that was a twentieth of a Python
    worker's CPU. Here each message is a raw protobuf message, built in C.
    Returning means every message is durable; a failed request raises ``TransientError``
    (the requests before it were published: the caller publishes the batch again,
    consumers tolerate duplicates), a topic that does not exist ``PermanentError``. A
    message that cannot fit one request raises ``PermanentError`` before anything is
    sent: retrying cannot succeed.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from google.api_core import exceptions as gexc
from google.api_core import retry as gretry
from google.pubsub_v1.types import PublishRequest, PublishResponse, PubsubMessage
from plowline_core.errors import PermanentError

from plowline_cloud.errors import translated

if TYPE_CHECKING:
    from google.pubsub_v1 import PublisherClient

MAX_REQUEST_MESSAGES = 1000
"""Pub/Sub's limit of messages per Publish request."""
MAX_REQUEST_BYTES = 10_000_000
"""Pub/Sub's limit of a Publish request's size (the batching client's ``_SERVER_PUBLISH_MAX_BYTES``)."""
_FRAMING = 16  # a request's bytes around each message (field tag, length) and for the topic
# The batching client's retry of Publish: these codes, backing off, within the call's timeout.
_RETRY = gretry.Retry(
    predicate=gretry.if_exception_type(
        gexc.Aborted,
        gexc.Cancelled,
        gexc.DeadlineExceeded,
        gexc.InternalServerError,
        gexc.ResourceExhausted,
        gexc.ServiceUnavailable,
        gexc.Unknown,
    ),
    initial=0.1,
    maximum=60.0,
    multiplier=4.0,
)


class PubSubPublisher:
    """Publish to one topic in whole Publish requests (satisfies ``Publisher``)."""

    def __init__(self, client: PublisherClient, topic_path: str, timeout: float = 60.0) -> None:
        self._client = client
        self._topic = topic_path
        self._timeout = timeout

    @property
    def topic_path(self) -> str:
        """The full topic path (``projects/P/topics/T``)."""
        return self._topic

    def publish(
        self, messages: Sequence[bytes], attributes: Mapping[str, str] | None = None
    ) -> list[str]:
        """Publish ``messages`` (each with ``attributes``) and return their ids in order, once durable.

        Raises:
            PermanentError: a message cannot fit one request (nothing sent), or the topic
                does not exist.
            TransientError: a request failed within ``timeout`` seconds in total.
        """
        operation = f"publish to {self._topic}"
        make = PubsubMessage.pb()
        built = [make(data=data, attributes=attributes) for data in messages]
        budget = MAX_REQUEST_BYTES - len(self._topic.encode()) - _FRAMING
        sizes = [message.ByteSize() for message in built]  # once: upb walks the message
        largest = max(sizes, default=0)
        if largest + _FRAMING > budget:
            raise PermanentError(
                f"{operation}: a message of {largest} bytes does not fit one Pub/Sub publish "
                f"request of {MAX_REQUEST_BYTES} bytes; cut it below 10 MB"
            )
        deadline = time.monotonic() + self._timeout
        ids: list[str] = []
        for chunk in _requests(built, sizes, budget):
            request = PublishRequest.wrap(PublishRequest.pb()(topic=self._topic, messages=chunk))
            remaining = max(0.1, deadline - time.monotonic())
            with translated(operation):
                response = self._client.publish(
                    request=request, retry=_RETRY.with_timeout(remaining), timeout=remaining
                )
            ids.extend(PublishResponse.pb(response).message_ids)
        return ids


def _requests(
    messages: Sequence[PubsubMessage], sizes: Sequence[int], budget: int
) -> Iterator[list[PubsubMessage]]:
    """Yield the messages in order, in chunks that fit one request each (``sizes``: theirs)."""
    chunk: list[PubsubMessage] = []
    size = 0
    for message, message_size in zip(messages, sizes, strict=True):
        weight = message_size + _FRAMING
        if chunk and (len(chunk) >= MAX_REQUEST_MESSAGES or size + weight > budget):
            yield chunk
            chunk, size = [], 0
        chunk.append(message)
        size += weight
    if chunk:
        yield chunk
