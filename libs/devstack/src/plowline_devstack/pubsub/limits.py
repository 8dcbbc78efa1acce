"""Pub/Sub's publish request limits, always on (a correction, not a fault).

The real service refuses, with 400 INVALID_ARGUMENT, a publish request of more than 1,000
messages, or one larger than 10 MB (which also bounds each message): "Request payload size
exceeds the limit: 10485760 bytes." (pubsub quotas page; error text as the service words
it). The official Python client batches below these limits on its own (100 messages, 1 MB
by default, never above 10,000,000 bytes), so a product hits them only when it builds
requests itself or publishes one message too large: the emulator must refuse them too, or
such a product passes every test and fails in production.

Notes:
    Ack deadlines (10-600 s on subscriptions and streams, 0-600 s on ModifyAckDeadline)
    are checked where they are given: :mod:`.broker` and :mod:`.streaming`.
"""

from __future__ import annotations

from typing import Any

import grpc

from plowline_devstack.pubsub.status import StatusError

MAX_REQUEST_BYTES = 10 * 1024 * 1024
MAX_MESSAGES = 1000


def check_publish(request: Any) -> None:
    """Raise INVALID_ARGUMENT when a PublishRequest is over Pub/Sub's count or size limit."""
    count = len(request.messages)
    if count > MAX_MESSAGES:
        raise StatusError(
            grpc.StatusCode.INVALID_ARGUMENT,
            f"The value for message_count is too large. You passed {count} in the request, "
            f"but the maximum value is {MAX_MESSAGES}.",
        )
    if request.ByteSize() > MAX_REQUEST_BYTES:
        raise StatusError(
            grpc.StatusCode.INVALID_ARGUMENT,
            f"Request payload size exceeds the limit: {MAX_REQUEST_BYTES} bytes.",
        )
