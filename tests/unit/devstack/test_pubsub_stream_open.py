"""Our Pub/Sub emulator's StreamingPull when its subscription goes away while the stream opens."""

from __future__ import annotations

from typing import Any

import grpc
import pytest
from google.pubsub_v1 import types
from plowline_devstack.pubsub.backlog import Backlog
from plowline_devstack.pubsub.broker import Broker
from plowline_devstack.pubsub.streaming import streaming_pull

pytestmark = pytest.mark.unit

_TOPIC = "projects/plowline-test/topics/topic-1"
_SUBSCRIPTION = "projects/plowline-test/subscriptions/sub-1"


class _Aborted(Exception):
    """What ``context.abort`` raises, as gRPC's does, with the status it was given."""

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(details)
        self.code = code


class _Context:
    """The servicer context the stream reads: abort and the close callback."""

    def abort(self, code: grpc.StatusCode, details: str) -> None:
        raise _Aborted(code, details)

    def add_callback(self, callback: Any) -> bool:
        return True


class _DeletedAfterLookup(Broker):
    """A broker whose subscription is deleted right after the stream looked its backlog up."""

    def backlog(self, name: str) -> Backlog:
        found = super().backlog(name)
        self.delete_subscription(name)  # another client's call, landing in between
        return found


def test_a_subscription_deleted_while_its_stream_opens_ends_it_with_not_found() -> None:
    """The stream ends with NOT_FOUND, not an exception the client would see as UNKNOWN."""
    broker = _DeletedAfterLookup()
    broker.create_topic(types.Topic.pb()(name=_TOPIC))
    broker.create_subscription(types.Subscription.pb()(name=_SUBSCRIPTION, topic=_TOPIC))
    first = types.StreamingPullRequest.pb()(
        subscription=_SUBSCRIPTION, stream_ack_deadline_seconds=10, max_outstanding_messages=10
    )
    with pytest.raises(_Aborted) as ended:
        next(streaming_pull(broker, iter([first]), _Context()))  # type: ignore[arg-type]
    assert ended.value.code is grpc.StatusCode.NOT_FOUND
