"""StreamingPull: one bidirectional stream of leased messages per subscriber connection.

Notes:
    The request stream is read on its own thread, so acks, modacks, deadline updates
    and heartbeats sent on the stream are honoured while the response side waits for
    messages. Flow control uses ``max_outstanding_messages``/``max_outstanding_bytes``
    from the first request; an ack or nack from any RPC frees room at once.
    Every response carries ``subscription_properties``, as the real service's do.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import grpc
import structlog
from google.pubsub_v1 import types

from plowline_devstack.faults.pubsub import UNAVAILABLE_MESSAGE
from plowline_devstack.pubsub import names
from plowline_devstack.pubsub.backlog import Backlog, Holder, LeasedEntry
from plowline_devstack.pubsub.broker import MAX_ACK_DEADLINE, MIN_ACK_DEADLINE, Broker
from plowline_devstack.pubsub.status import StatusError

StreamingPullResponsePb: Any = types.StreamingPullResponse.pb()
_BATCH = 1000
# How long a stream waits for messages before re-checking that it is still wanted.
_IDLE_WAIT = 5.0
_log = structlog.get_logger("plowline.pubsub")


def fill(target: Any, batch: list[LeasedEntry], with_attempts: bool) -> None:
    """Append ``batch`` to a repeated ``ReceivedMessage`` field."""
    for delivery in batch:
        received = target.add()
        received.ack_id = delivery.ack_id
        received.message.CopyFrom(delivery.entry.message)
        if with_attempts:
            received.delivery_attempt = delivery.entry.attempts


class _Stream:
    """The state one StreamingPull shares between its reader thread and its responses."""

    def __init__(self, broker: Broker, backlog: Backlog, first: Any) -> None:
        self.broker = broker
        self.opened = time.monotonic()
        self.backlog = backlog
        self.subscription = backlog.name
        self.deadline = _stream_deadline(first.stream_ack_deadline_seconds)
        self.holder = Holder(first.max_outstanding_messages, first.max_outstanding_bytes)
        self.closed = False
        self.error: StatusError | None = None

    def apply(self, request: Any) -> None:
        """Honour the acks, modacks and deadline change carried by one request."""
        if request.ack_ids:
            self.broker.acknowledge(self.subscription, request.ack_ids)
        if len(request.modify_deadline_ack_ids) != len(request.modify_deadline_seconds):
            raise StatusError(
                grpc.StatusCode.INVALID_ARGUMENT,
                "modify_deadline_seconds and modify_deadline_ack_ids must be the same size.",
            )
        by_seconds: dict[int, list[str]] = {}
        for ack_id, seconds in zip(
            request.modify_deadline_ack_ids, request.modify_deadline_seconds, strict=True
        ):
            by_seconds.setdefault(seconds, []).append(ack_id)
        for seconds, ack_ids in by_seconds.items():
            self.broker.modify(self.subscription, ack_ids, seconds)
        if request.stream_ack_deadline_seconds:
            self.deadline = _stream_deadline(request.stream_ack_deadline_seconds)

    def read(self, requests: Iterator[Any]) -> None:
        """Apply every later request until the client stops sending or goes away."""
        try:
            for request in requests:
                self.apply(request)
        except StatusError as error:
            self.error = error
        except grpc.RpcError:
            pass  # the client cancelled; the response side ends below
        finally:
            self.close()

    def close(self) -> None:
        """End the stream and wake its response side."""
        self.closed = True
        self.backlog.wake()


def _stream_deadline(seconds: int) -> int:
    if not MIN_ACK_DEADLINE <= seconds <= MAX_ACK_DEADLINE:
        raise StatusError(
            grpc.StatusCode.INVALID_ARGUMENT,
            f"Invalid stream ack deadline given: {seconds} seconds. "
            f"The ack deadline must be between {MIN_ACK_DEADLINE} and {MAX_ACK_DEADLINE} seconds.",
        )
    return seconds


def streaming_pull(
    broker: Broker, requests: Iterator[Any], context: grpc.ServicerContext
) -> Iterator[Any]:
    """Serve one StreamingPull call: lease messages until the client goes away."""
    first = next(requests, None)
    if first is None:
        return
    try:
        subscription = names.subscription_name(first.subscription)
        backlog = broker.backlog(subscription)
        stream = _Stream(broker, backlog, first)
        stream.apply(first)
        # Read with the rest: a subscription deleted since ``backlog`` is NOT_FOUND here,
        # not an exception out of the generator (the client would see UNKNOWN).
        attempts = broker.reports_attempts(subscription)
        properties = StreamingPullResponsePb.SubscriptionProperties(
            message_ordering_enabled=broker.ordered(subscription)
        )
    except StatusError as error:
        context.abort(error.code, error.message)
    context.add_callback(stream.close)
    threading.Thread(
        target=stream.read, args=(requests,), name="pubsub-stream-reader", daemon=True
    ).start()
    _log.debug("stream_opened", subscription=subscription, client_id=first.client_id)
    try:
        yield from _respond(broker, stream, properties, attempts)
    except StatusError as error:
        context.abort(error.code, error.message)
    if stream.error is not None:
        context.abort(stream.error.code, stream.error.message)
    _log.debug("stream_closed", subscription=subscription, client_id=first.client_id)


def _respond(broker: Broker, stream: _Stream, properties: Any, attempts: bool) -> Iterator[Any]:
    lifetime = broker.faults.stream_lifetime
    while not stream.closed:
        wait = _IDLE_WAIT
        if lifetime is not None:
            wait = max(0.0, min(wait, stream.opened + lifetime - time.monotonic()))
        batch = broker.pull(
            stream.subscription,
            _BATCH,
            stream.deadline,
            wait,
            stream.holder,
            lambda: stream.closed,
        )
        if stream.backlog.deleted:
            raise names.not_found(stream.subscription)
        if batch and stream.closed:
            # Leased after the client left: hand them back now rather than at the deadline.
            stream.backlog.modify([d.ack_id for d in batch], 0)
            return
        if _breaks(broker, stream, lifetime, bool(batch)):
            # Fault: end the stream as the service does; what was not sent is handed back.
            stream.backlog.modify([d.ack_id for d in batch], 0)
            raise StatusError(grpc.StatusCode.UNAVAILABLE, UNAVAILABLE_MESSAGE)
        if batch:
            response = StreamingPullResponsePb(subscription_properties=properties)
            fill(response.received_messages, batch, attempts)
            yield response


def _breaks(broker: Broker, stream: _Stream, lifetime: float | None, responding: bool) -> bool:
    """Return True when a fault ends the stream now (its lifetime is up, or a response's draw)."""
    if lifetime is not None and time.monotonic() - stream.opened >= lifetime:
        return True
    return responding and broker.faults.stream_breaks()
