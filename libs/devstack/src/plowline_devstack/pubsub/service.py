"""The gRPC face of the broker: ``google.pubsub.v1.Publisher`` and ``Subscriber``.

Notes:
    Handlers are registered with ``grpc.method_handlers_generic_handler``; requests and
    responses are the raw protobuf classes behind ``google.pubsub_v1.types``, so no
    generated stubs are needed. Methods not listed here answer UNIMPLEMENTED.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import grpc
import structlog
from google.protobuf import empty_pb2
from google.pubsub_v1 import types

from plowline_devstack.faults.pubsub import UNAVAILABLE_MESSAGE
from plowline_devstack.pubsub import limits, names, streaming
from plowline_devstack.pubsub.broker import Broker
from plowline_devstack.pubsub.status import StatusError

_log = structlog.get_logger("plowline.pubsub")
_MAX_PULL = 1000
# A blocking Pull waits at most this long for a first message before answering empty.
_PULL_WAIT = 10.0
_Handler = Callable[[Any, grpc.ServicerContext], Any]


def _pb(proto_plus_type: Any) -> Any:
    return proto_plus_type.pb()


def _unary(request_type: Any, response_type: Any, fn: _Handler) -> grpc.RpcMethodHandler:
    @functools.wraps(fn)
    def handle(request: Any, context: grpc.ServicerContext) -> Any:
        try:
            return fn(request, context)
        except StatusError as error:
            context.abort(error.code, error.message)

    return grpc.unary_unary_rpc_method_handler(
        handle,
        request_deserializer=request_type.FromString,
        response_serializer=response_type.SerializeToString,
    )


class PubSubService:
    """Translate Pub/Sub RPCs into broker calls."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker

    def handlers(self) -> list[grpc.GenericRpcHandler]:
        """Return the generic handlers for the Publisher and Subscriber services."""
        t, empty = types, empty_pb2.Empty
        publisher = {
            "CreateTopic": _unary(_pb(t.Topic), _pb(t.Topic), self.create_topic),
            "GetTopic": _unary(_pb(t.GetTopicRequest), _pb(t.Topic), self.get_topic),
            "ListTopics": _unary(
                _pb(t.ListTopicsRequest), _pb(t.ListTopicsResponse), self.list_topics
            ),
            "DeleteTopic": _unary(_pb(t.DeleteTopicRequest), empty, self.delete_topic),
            "Publish": _unary(_pb(t.PublishRequest), _pb(t.PublishResponse), self.publish),
            "ListTopicSubscriptions": _unary(
                _pb(t.ListTopicSubscriptionsRequest),
                _pb(t.ListTopicSubscriptionsResponse),
                self.list_topic_subscriptions,
            ),
        }
        subscriber = {
            "CreateSubscription": _unary(
                _pb(t.Subscription), _pb(t.Subscription), self.create_subscription
            ),
            "GetSubscription": _unary(
                _pb(t.GetSubscriptionRequest), _pb(t.Subscription), self.get_subscription
            ),
            "ListSubscriptions": _unary(
                _pb(t.ListSubscriptionsRequest),
                _pb(t.ListSubscriptionsResponse),
                self.list_subscriptions,
            ),
            "DeleteSubscription": _unary(
                _pb(t.DeleteSubscriptionRequest), empty, self.delete_subscription
            ),
            "Pull": _unary(_pb(t.PullRequest), _pb(t.PullResponse), self.pull),
            "Acknowledge": _unary(_pb(t.AcknowledgeRequest), empty, self.acknowledge),
            "ModifyAckDeadline": _unary(
                _pb(t.ModifyAckDeadlineRequest), empty, self.modify_ack_deadline
            ),
            "StreamingPull": grpc.stream_stream_rpc_method_handler(
                self.streaming_pull,
                request_deserializer=_pb(t.StreamingPullRequest).FromString,
                response_serializer=_pb(t.StreamingPullResponse).SerializeToString,
            ),
        }
        return [
            grpc.method_handlers_generic_handler("google.pubsub.v1.Publisher", publisher),
            grpc.method_handlers_generic_handler("google.pubsub.v1.Subscriber", subscriber),
        ]

    # -- Publisher ------------------------------------------------------------------
    def create_topic(self, request: Any, context: grpc.ServicerContext) -> Any:
        """Create a topic."""
        topic = self.broker.create_topic(request)
        _log.debug("topic_created", topic=topic.name)
        return topic

    def get_topic(self, request: Any, context: grpc.ServicerContext) -> Any:
        """Return a topic."""
        return self.broker.get_topic(request.topic)

    def list_topics(self, request: Any, context: grpc.ServicerContext) -> Any:
        """Return a page of a project's topics."""
        topics, token = self.broker.list_topics(
            request.project, request.page_size, request.page_token
        )
        return _pb(types.ListTopicsResponse)(topics=topics, next_page_token=token)

    def delete_topic(self, request: Any, context: grpc.ServicerContext) -> Any:
        """Delete a topic."""
        self.broker.delete_topic(request.topic)
        _log.debug("topic_deleted", topic=request.topic)
        return empty_pb2.Empty()

    def publish(self, request: Any, context: grpc.ServicerContext) -> Any:
        """Publish messages; one id per message, in request order (within Pub/Sub's limits)."""
        limits.check_publish(request)
        ids = self.broker.publish(request.topic, request.messages)
        return _pb(types.PublishResponse)(message_ids=ids)

    def list_topic_subscriptions(self, request: Any, context: grpc.ServicerContext) -> Any:
        """Return a page of the names of a topic's subscriptions."""
        subs, token = self.broker.topic_subscriptions(
            request.topic, request.page_size, request.page_token
        )
        return _pb(types.ListTopicSubscriptionsResponse)(subscriptions=subs, next_page_token=token)

    # -- Subscriber -----------------------------------------------------------------
    def create_subscription(self, request: Any, context: grpc.ServicerContext) -> Any:
        """Create a subscription."""
        sub = self.broker.create_subscription(request)
        _log.debug("subscription_created", subscription=sub.name, topic=sub.topic)
        return sub

    def get_subscription(self, request: Any, context: grpc.ServicerContext) -> Any:
        """Return a subscription."""
        return self.broker.get_subscription(request.subscription)

    def list_subscriptions(self, request: Any, context: grpc.ServicerContext) -> Any:
        """Return a page of a project's subscriptions."""
        subs, token = self.broker.list_subscriptions(
            request.project, request.page_size, request.page_token
        )
        return _pb(types.ListSubscriptionsResponse)(subscriptions=subs, next_page_token=token)

    def delete_subscription(self, request: Any, context: grpc.ServicerContext) -> Any:
        """Delete a subscription."""
        self.broker.delete_subscription(request.subscription)
        _log.debug("subscription_deleted", subscription=request.subscription)
        return empty_pb2.Empty()

    def pull(self, request: Any, context: grpc.ServicerContext) -> Any:
        """Lease up to ``max_messages`` messages, waiting for one unless told not to."""
        names.subscription_name(request.subscription)
        if request.max_messages <= 0:
            raise StatusError(grpc.StatusCode.INVALID_ARGUMENT, "max_messages must be positive.")
        faults = self.broker.faults
        if faults.active and faults.pull_refused():  # pull-unavailable: nothing leased
            raise StatusError(grpc.StatusCode.UNAVAILABLE, UNAVAILABLE_MESSAGE)
        wait = 0.0
        if not request.return_immediately:
            remaining = context.time_remaining()
            wait = _PULL_WAIT if remaining is None else max(0.0, min(_PULL_WAIT, remaining - 0.5))
        sub = request.subscription
        batch = self.broker.pull(
            sub,
            min(request.max_messages, _MAX_PULL),
            self.broker.ack_deadline(sub),
            wait,
            stop=lambda: not context.is_active(),
        )
        response = _pb(types.PullResponse)()
        streaming.fill(response.received_messages, batch, self.broker.reports_attempts(sub))
        return response

    def acknowledge(self, request: Any, context: grpc.ServicerContext) -> Any:
        """Acknowledge messages; expired ack ids are ignored, malformed ones refused."""
        names.subscription_name(request.subscription)
        self._refuse_when_faulted()
        self.broker.acknowledge(request.subscription, names.ack_ids(request.ack_ids))
        return empty_pb2.Empty()

    def modify_ack_deadline(self, request: Any, context: grpc.ServicerContext) -> Any:
        """Move ack deadlines; 0 seconds is a nack."""
        names.subscription_name(request.subscription)
        self._refuse_when_faulted()
        faults = self.broker.faults
        if faults.active and faults.modack_refused():  # modify-ack-deadline-unavailable
            raise StatusError(grpc.StatusCode.UNAVAILABLE, UNAVAILABLE_MESSAGE)
        ack_ids = names.ack_ids(request.ack_ids)
        self.broker.modify(request.subscription, ack_ids, request.ack_deadline_seconds)
        return empty_pb2.Empty()

    def _refuse_when_faulted(self) -> None:
        """Answer UNAVAILABLE, nothing applied, when ``acknowledge-unavailable`` strikes."""
        faults = self.broker.faults
        if faults.active and faults.ack_call_refused():
            raise StatusError(grpc.StatusCode.UNAVAILABLE, UNAVAILABLE_MESSAGE)

    def streaming_pull(self, requests: Any, context: grpc.ServicerContext) -> Any:
        """Serve a StreamingPull call."""
        return streaming.streaming_pull(self.broker, requests, context)
