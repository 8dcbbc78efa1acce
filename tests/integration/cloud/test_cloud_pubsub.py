"""PubSubPublisher and PubSubSubscriber against our Pub/Sub emulator and Google's."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from datetime import UTC
from typing import Any

import pytest
from plowline_cloud.clients import publisher_client, subscriber_client
from plowline_cloud.pubsub import Delivery, PubSubPublisher, PubSubSubscriber
from plowline_core.errors import PermanentError
from plowline_loader.batch.sizes import PUBSUB_MESSAGE_BYTES


@pytest.fixture(scope="module", params=["plowline", "google"])
def pubsub_target(request: pytest.FixtureRequest, cloud_endpoints: Any) -> str:
    """The adapters run against our emulator, then against Google's (the second opinion)."""
    if request.param == "google":
        return str(request.getfixturevalue("google_pubsub"))
    return str(cloud_endpoints.pubsub_target)


@pytest.fixture(scope="module")
def publisher(pubsub_target: str) -> Any:
    """A PublisherClient on this module's emulator."""
    return publisher_client(pubsub_target)


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

    def __call__(self, delivery: Delivery) -> None:
        delivery.ack()
        with self._lock:
            self.ids[delivery.message_id] += 1
            if len(self.ids) >= self.expected:
                self.done.set()


def _pull_all(subscriber: PubSubSubscriber, count: int) -> list[Delivery]:
    received: list[Delivery] = []
    for _ in range(20):
        received.extend(subscriber.pull_batch(count - len(received), timeout=5.0))
        if len(received) >= count:
            break
    return received


def test_ten_thousand_messages_none_lost(channel: Any, publisher: Any, subscriber: Any) -> None:
    """10,000 published messages all arrive through the streaming subscriber, each once."""
    ids = PubSubPublisher(publisher, channel.topic).publish(
        [b"x" * 100 + str(i).encode() for i in range(10_000)]
    )
    collector = _Collector(len(ids))
    consumer = PubSubSubscriber(subscriber, channel.subscription, max_messages=500)
    consumer.start(collector)
    collector.done.wait(timeout=180)
    consumer.stop(timeout=60)
    assert (set(ids), []) == (set(collector.ids), [i for i, n in collector.ids.items() if n > 1])


def test_publish_returns_one_id_per_message(channel: Any, publisher: Any) -> None:
    """publish() returns as many distinct ids as messages, in order of the messages."""
    ids = PubSubPublisher(publisher, channel.topic).publish([b"a", b"b", b"c"])
    expected = 3
    assert expected == len(set(ids))


def test_delivery_carries_the_message(channel: Any, publisher: Any, subscriber: Any) -> None:
    """A pulled Delivery has the data, attributes, id and an aware publish time."""
    [message_id] = PubSubPublisher(publisher, channel.topic).publish([b"payload"], {"kind": "test"})
    [delivery] = _pull_all(PubSubSubscriber(subscriber, channel.subscription), 1)
    delivery.ack()
    actual = (
        delivery.data,
        dict(delivery.attributes),
        delivery.message_id,
        delivery.publish_time.tzinfo,
    )
    assert (b"payload", {"kind": "test"}, message_id, UTC) == actual


def test_acked_pull_is_not_redelivered(channel: Any, publisher: Any, subscriber: Any) -> None:
    """Messages acked after a sync pull do not come back."""
    PubSubPublisher(publisher, channel.topic).publish([b"1", b"2", b"3"])
    consumer = PubSubSubscriber(subscriber, channel.subscription)
    consumer.acknowledge([d.ack_id for d in _pull_all(consumer, 3)])
    expected: list[Delivery] = []
    assert expected == consumer.pull_batch(10, timeout=2.0)


def test_nacked_pull_is_redelivered(channel: Any, publisher: Any, subscriber: Any) -> None:
    """A nacked message is delivered again at once."""
    [message_id] = PubSubPublisher(publisher, channel.topic).publish([b"again"])
    consumer = PubSubSubscriber(subscriber, channel.subscription)
    _pull_all(consumer, 1)[0].nack()
    redelivered = _pull_all(consumer, 1)
    consumer.acknowledge([d.ack_id for d in redelivered])
    assert [message_id] == [d.message_id for d in redelivered]


def test_extended_pull_is_held(channel: Any, publisher: Any, subscriber: Any) -> None:
    """A pulled message whose lease was extended is not handed to another pull."""
    PubSubPublisher(publisher, channel.topic).publish([b"held"])
    consumer = PubSubSubscriber(subscriber, channel.subscription)
    [delivery] = _pull_all(consumer, 1)
    consumer.extend([delivery.ack_id], 120)
    expected: list[Delivery] = []
    assert expected == consumer.pull_batch(10, timeout=2.0)


def test_stop_waits_for_callbacks(channel: Any, publisher: Any, subscriber: Any) -> None:
    """stop() returns only after the callback in flight has finished (and acked)."""
    PubSubPublisher(publisher, channel.topic).publish([b"slow"])
    started, release, finished = threading.Event(), threading.Event(), []

    def slow(delivery: Delivery) -> None:
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


def test_publish_to_missing_topic_is_permanent(cloud_endpoints: Any, publisher: Any) -> None:
    """Publishing to a topic that does not exist raises PermanentError."""
    topic = publisher.topic_path(cloud_endpoints.project, "no-such-topic-cloud")
    with pytest.raises(PermanentError, match="no-such-topic-cloud"):
        PubSubPublisher(publisher, topic, timeout=30).publish([b"lost"])


def test_a_message_near_the_request_limit_is_a_permanent_error(
    channel: Any, publisher: Any
) -> None:
    """A message 10 bytes under 10 MB does not fit one request (topic and framing): PermanentError, not ValueError."""
    with pytest.raises(PermanentError, match="does not fit one Pub/Sub publish request"):
        PubSubPublisher(publisher, channel.topic, timeout=30).publish([b"x" * 9_999_990])


def test_a_failed_insert_at_the_loader_budget_is_published(channel: Any, publisher: Any) -> None:
    """A message of the loader's failed-insert budget (10 MB less 64 KiB) fits one request."""
    ids = PubSubPublisher(publisher, channel.topic, timeout=60).publish(
        [b"x" * PUBSUB_MESSAGE_BYTES]
    )
    assert len(ids) == 1
