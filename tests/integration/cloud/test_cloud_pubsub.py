"""The Pub/Sub adapter (publisher, streaming subscriber, pull subscription) against our emulator and Google's."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from datetime import UTC
from typing import Any

import pytest
from plowline_cloud.clients import publish_api_client, publisher_client, subscriber_client
from plowline_cloud.pubsub.publisher import PubSubPublisher
from plowline_cloud.pubsub.pulled import PulledMessage
from plowline_cloud.pubsub.streaming import PubSubReceivedMessage, PubSubSubscriber
from plowline_cloud.pubsub.subscription import Subscription


@pytest.fixture(scope="module", params=["plowline", "google"])
def pubsub_target(request: pytest.FixtureRequest, cloud_endpoints: Any) -> str:
    """The adapters run against our emulator, then against Google's (the second opinion)."""
    if request.param == "google":
        return str(request.getfixturevalue("google_pubsub"))
    return str(cloud_endpoints.pubsub_target)


@pytest.fixture(scope="module")
def publisher(pubsub_target: str) -> Any:
    """A PublisherClient on this module's emulator (makes the topics)."""
    return publisher_client(pubsub_target)


@pytest.fixture(scope="module")
def api(pubsub_target: str) -> Any:
    """The Publisher API's GAPIC client on this module's emulator (``PubSubPublisher``'s)."""
    return publish_api_client(pubsub_target)


@pytest.fixture(scope="module")
def subscriber(pubsub_target: str) -> Iterator[Any]:
    """A SubscriberClient on this module's emulator."""
    client = subscriber_client(pubsub_target)
    yield client
    client.close()


class _Collector:
    """Ack every delivery and remember its message id; signal once ``expected`` ids came."""

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.ids: Counter[str] = Counter()
        self.done = threading.Event()
        self._lock = threading.Lock()

    def __call__(self, delivery: PubSubReceivedMessage) -> None:
        delivery.ack()
        with self._lock:
            self.ids[delivery.message_id] += 1
            if len(self.ids) >= self.expected:
                self.done.set()


def _pull_all(subscription: Subscription, count: int) -> list[PulledMessage]:
    received: list[PulledMessage] = []
    for _ in range(20):
        received.extend(subscription.pull(count - len(received), timeout_s=5.0))
        if len(received) >= count:
            break
    return received


def test_ten_thousand_messages_none_lost(channel: Any, api: Any, subscriber: Any) -> None:
    """10,000 published messages all arrive through the streaming subscriber, each once."""
    ids = PubSubPublisher(api, channel.topic).publish(
        [b"x" * 100 + str(i).encode() for i in range(10_000)]
    )
    collector = _Collector(len(ids))
    consumer = PubSubSubscriber(subscriber, channel.subscription, max_messages=500)
    consumer.start(collector)
    collector.done.wait(timeout=180)
    consumer.stop(timeout=60)
    assert (set(ids), []) == (set(collector.ids), [i for i, n in collector.ids.items() if n > 1])


def test_publish_returns_one_id_per_message(channel: Any, api: Any) -> None:
    """publish() returns as many distinct ids as messages, in order of the messages."""
    ids = PubSubPublisher(api, channel.topic).publish([b"a", b"b", b"c"])
    expected = 3
    assert expected == len(set(ids))


def test_a_streamed_message_carries_the_message(channel: Any, api: Any, subscriber: Any) -> None:
    """A streamed PubSubReceivedMessage has the data, attributes, id and an aware publish time."""
    [message_id] = PubSubPublisher(api, channel.topic).publish([b"payload"], {"kind": "test"})
    received: list[PubSubReceivedMessage] = []
    arrived = threading.Event()

    def keep(message: PubSubReceivedMessage) -> None:
        message.ack()
        received.append(message)
        arrived.set()

    consumer = PubSubSubscriber(subscriber, channel.subscription)
    consumer.start(keep)
    arrived.wait(timeout=60)
    consumer.stop(timeout=60)
    actual = [(m.data, dict(m.attributes), m.message_id, m.publish_time.tzinfo) for m in received]
    assert [(b"payload", {"kind": "test"}, message_id, UTC)] == actual


def test_a_pulled_message_carries_the_message(channel: Any, api: Any, pubsub_target: str) -> None:
    """A PulledMessage has its subscription, the data, attributes, id and a publish time."""
    [message_id] = PubSubPublisher(api, channel.topic).publish([b"payload"], {"kind": "test"})
    subscription = Subscription(channel.subscription, pubsub_target)
    [pulled] = _pull_all(subscription, 1)
    subscription.ack([pulled.ack_id])
    actual = (pulled.subscription, pulled.data, pulled.attributes, pulled.message_id)
    assert (channel.subscription, b"payload", (("kind", "test"),), message_id) == actual
    assert pulled.publish_time_us > 0


def test_acked_pull_is_not_redelivered(channel: Any, api: Any, pubsub_target: str) -> None:
    """Messages acked after a pull do not come back."""
    PubSubPublisher(api, channel.topic).publish([b"1", b"2", b"3"])
    subscription = Subscription(channel.subscription, pubsub_target)
    subscription.ack([m.ack_id for m in _pull_all(subscription, 3)])
    expected: list[PulledMessage] = []
    assert expected == subscription.pull(10, timeout_s=2.0)


def test_nacked_pull_is_redelivered(channel: Any, api: Any, pubsub_target: str) -> None:
    """A nacked message is delivered again at once."""
    [message_id] = PubSubPublisher(api, channel.topic).publish([b"again"])
    subscription = Subscription(channel.subscription, pubsub_target)
    subscription.nack([m.ack_id for m in _pull_all(subscription, 1)])
    redelivered = _pull_all(subscription, 1)
    subscription.ack([m.ack_id for m in redelivered])
    assert [message_id] == [m.message_id for m in redelivered]


def test_extended_pull_is_held(channel: Any, api: Any, pubsub_target: str) -> None:
    """A pulled message whose lease was extended is not handed to another pull."""
    PubSubPublisher(api, channel.topic).publish([b"held"])
    subscription = Subscription(channel.subscription, pubsub_target)
    [pulled] = _pull_all(subscription, 1)
    subscription.modack([pulled.ack_id], 120)
    expected: list[PulledMessage] = []
    assert expected == subscription.pull(10, timeout_s=2.0)


def test_stop_waits_for_callbacks(channel: Any, api: Any, subscriber: Any) -> None:
    """stop() returns only after the callback in flight has finished (and acked)."""
    PubSubPublisher(api, channel.topic).publish([b"slow"])
    started, release, finished = threading.Event(), threading.Event(), []

    def slow(delivery: PubSubReceivedMessage) -> None:
        started.set()
        release.wait(timeout=30)
        delivery.ack()
        finished.append(delivery.message_id)

    consumer = PubSubSubscriber(subscriber, channel.subscription)
    consumer.start(slow)
    started.wait(timeout=30)
    stopper = threading.Thread(target=consumer.stop, kwargs={"timeout": 60})
    stopper.start()
    stopper.join(timeout=1.0)
    blocked = stopper.is_alive()
    release.set()
    stopper.join(timeout=60)
    expected = (True, 1)
    assert expected == (blocked, len(finished))
