"""PubSubPublisher against the local Pub/Sub emulator: whole batches in whole requests."""

from __future__ import annotations

from typing import Any

import pytest
from plowline_cloud.clients import publish_api_client
from plowline_cloud.pubsub.publisher import PubSubPublisher
from plowline_cloud.pubsub.subscription import Subscription
from plowline_core.errors import PermanentError, TransientError
from plowline_devstack.stack.servers import free_port
from plowline_loader.batch.sizes import PUBSUB_MESSAGE_BYTES


@pytest.fixture(scope="module")
def api(cloud_endpoints: Any) -> Any:
    """The Publisher API's GAPIC client on the local emulator."""
    return publish_api_client(cloud_endpoints.pubsub_target)


def _drain(endpoint: str, path: str, count: int) -> dict[str, bytes]:
    subscription = Subscription(path, endpoint)
    received: dict[str, bytes] = {}
    for _ in range(40):
        batch = subscription.pull(1000, timeout_s=5.0)
        subscription.ack([d.ack_id for d in batch])
        received.update({d.message_id: d.data for d in batch})
        if len(received) >= count:
            break
    return received


def test_a_batch_over_one_request_arrives_whole_with_ids_in_order(
    channel: Any, api: Any, cloud_endpoints: Any
) -> None:
    """2,500 messages (three requests' worth) all arrive, each id naming its own message."""
    messages = [f"bad row {i}".encode() for i in range(2_500)]
    ids = PubSubPublisher(api, channel.topic).publish(messages)
    received = _drain(cloud_endpoints.pubsub_target, channel.subscription, len(messages))
    assert (len(set(ids)), [received.get(i) for i in ids]) == (len(messages), messages)


def test_requests_split_by_bytes_under_the_limit(
    channel: Any, api: Any, cloud_endpoints: Any
) -> None:
    """Three 4 MB messages go in requests under 10 MB each, and all arrive."""
    messages = [bytes([65 + i]) * 4_000_000 for i in range(3)]
    ids = PubSubPublisher(api, channel.topic).publish(messages)
    received = _drain(cloud_endpoints.pubsub_target, channel.subscription, len(messages))
    assert [received.get(i) for i in ids] == messages


def test_an_empty_batch_sends_nothing(channel: Any, api: Any) -> None:
    """Publishing no message returns no id."""
    assert PubSubPublisher(api, channel.topic).publish([]) == []


def test_a_message_that_cannot_fit_a_request_is_permanent_and_nothing_is_sent(
    channel: Any, api: Any, cloud_endpoints: Any
) -> None:
    """A message 10 bytes under 10 MB raises PermanentError before its batch's small message is sent."""
    publisher = PubSubPublisher(api, channel.topic, timeout=30)
    with pytest.raises(PermanentError, match="does not fit one Pub/Sub publish request"):
        publisher.publish([b"small", b"x" * 9_999_990])
    assert Subscription(channel.subscription, cloud_endpoints.pubsub_target).pull(10, 2.0) == []


def test_a_message_of_the_loader_budget_is_published(channel: Any, api: Any) -> None:
    """A message of the loader's failed-insert budget (10 MB less 64 KiB) fits one request."""
    ids = PubSubPublisher(api, channel.topic, timeout=60).publish([b"x" * PUBSUB_MESSAGE_BYTES])
    assert len(ids) == 1


def test_a_missing_topic_is_permanent(cloud_endpoints: Any, api: Any) -> None:
    """Publishing to a topic that does not exist raises PermanentError naming it."""
    topic = f"projects/{cloud_endpoints.project}/topics/no-such-topic-requests"
    with pytest.raises(PermanentError, match="no-such-topic-requests"):
        PubSubPublisher(api, topic, timeout=30).publish([b"lost"])


def test_an_unreachable_service_is_transient_within_the_timeout() -> None:
    """With nothing listening, publish raises TransientError once its timeout has passed."""
    api = publish_api_client(f"127.0.0.1:{free_port()}")
    with pytest.raises(TransientError):
        PubSubPublisher(api, "projects/p/topics/t", timeout=2).publish([b"lost"])
