"""Each Pub/Sub fault of the catalogue, seen through the official google-cloud-pubsub clients."""

from __future__ import annotations

import itertools
import random
import threading
import time
import warnings
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from google.api_core import exceptions
from google.cloud import pubsub_v1
from google.pubsub_v1 import PublisherClient, SubscriberClient, types
from google.pubsub_v1.services.publisher.transports import PublisherGrpcTransport
from google.pubsub_v1.services.subscriber.transports import SubscriberGrpcTransport
from plowline_devstack.faults.plan import parse_faults
from plowline_devstack.faults.pubsub import PubSubFaults
from plowline_devstack.pubsub import PubSubEmulator, wait_until_ready
from support.timing import wait_for

PROJECT = "projects/plowline-faults"
_names = itertools.count()


class Clients:
    """An emulator started with one fault plan, and the GAPIC clients talking to it."""

    def __init__(self, faults: dict[str, Any], seed: int = 0) -> None:
        plan = parse_faults({"seed": seed, "pubsub": faults})
        self.faults = PubSubFaults(plan.for_server("pubsub"), plan.seed)
        self.emulator = PubSubEmulator("127.0.0.1", 0, faults=self.faults)
        port = self.emulator.start()
        wait_until_ready("127.0.0.1", port, timeout=10)
        self.endpoint = f"127.0.0.1:{port}"
        self.publisher = PublisherClient(
            transport=PublisherGrpcTransport(channel=grpc.insecure_channel(self.endpoint))
        )
        self.subscriber = SubscriberClient(
            transport=SubscriberGrpcTransport(channel=grpc.insecure_channel(self.endpoint))
        )
        self.topic = str(
            self.publisher.create_topic(name=f"{PROJECT}/topics/t-{next(_names)}").name
        )
        self.subscription = str(
            self.subscriber.create_subscription(
                name=f"{PROJECT}/subscriptions/s-{next(_names)}",
                topic=self.topic,
                ack_deadline_seconds=60,
            ).name
        )

    def publish(self, *payloads: bytes) -> list[str]:
        """Publish ``payloads`` in one request; return their ids."""
        messages = [types.PubsubMessage(data=p) for p in payloads]
        return list(self.publisher.publish(topic=self.topic, messages=messages).message_ids)

    def pull(self, limit: int = 100) -> list[Any]:
        """Pull what is there now (no waiting)."""
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "The return_immediately flag", DeprecationWarning)
            response = self.subscriber.pull(
                subscription=self.subscription,
                max_messages=limit,
                return_immediately=True,
                timeout=5,
            )
        return list(response.received_messages)

    def ack(self, received: list[Any]) -> None:
        """Acknowledge ``received``."""
        self.subscriber.acknowledge(
            subscription=self.subscription, ack_ids=[r.ack_id for r in received]
        )

    def close(self) -> None:
        """Close the clients and stop the emulator."""
        self.publisher.transport.close()
        self.subscriber.transport.close()
        self.emulator.stop()


@pytest.fixture
def clients() -> Iterator[Any]:
    """``clients(faults, seed)``: an emulator with those Pub/Sub faults on, stopped afterwards."""
    started: list[Clients] = []

    def start(faults: dict[str, Any], seed: int = 0) -> Clients:
        started.append(Clients(faults, seed))
        return started[-1]

    yield start
    for each in started:
        each.close()


def test_late_ack_succeeds_but_the_message_is_redelivered(clients: Any) -> None:
    """late-ack-redelivery: Acknowledge answers OK, and the same message comes back."""
    c = clients({"late-ack-redelivery": {"rate": 1.0}})
    [message_id] = c.publish(b"late")
    first = c.pull()
    c.ack(first)
    again = c.pull()
    expected = ([message_id], [message_id], True)
    actual = (
        [r.message.message_id for r in first],
        [r.message.message_id for r in again],
        first[0].ack_id != again[0].ack_id,
    )
    assert expected == actual


def test_without_the_fault_an_ack_settles_the_message(clients: Any) -> None:
    """The kind emulator (no faults) never delivers an acked message again."""
    c = clients({})
    c.publish(b"once")
    c.ack(c.pull())
    expected: list[Any] = []
    assert expected == c.pull()


def test_a_duplicate_delivery_comes_under_its_own_ack_id_after_the_first_was_acked(
    clients: Any,
) -> None:
    """duplicate-delivery: a message acked in time is delivered once more on a later pull."""
    c = clients({"duplicate-delivery": {"rate": 1.0}})
    [message_id] = c.publish(b"twice")
    first = c.pull()
    c.ack(first)
    second = c.pull()
    c.ack(second)
    expected = ([message_id], [message_id], True)
    actual = (
        [r.message.message_id for r in first],
        [r.message.message_id for r in second],
        first[0].ack_id != second[0].ack_id,
    )
    assert expected == actual


def test_a_refused_nack_is_not_done(clients: Any) -> None:
    """acknowledge-unavailable: ModifyAckDeadline(0) answers UNAVAILABLE; no redelivery at once."""
    c = clients({"acknowledge-unavailable": {"rate": 1.0}})
    c.publish(b"kept leased")
    first = c.pull()
    with pytest.raises(exceptions.ServiceUnavailable, match="unable to fulfill your request"):
        c.subscriber.modify_ack_deadline(
            subscription=c.subscription,
            ack_ids=[first[0].ack_id],
            ack_deadline_seconds=0,
            retry=None,
        )
    expected: list[Any] = []
    assert expected == c.pull()


def test_a_refused_ack_leaves_the_message_to_come_back_after_its_deadline(clients: Any) -> None:
    """acknowledge-unavailable: Acknowledge answers UNAVAILABLE; 10 s later the message is back."""
    c = clients({"acknowledge-unavailable": {"rate": 1.0}})
    c.subscriber.create_subscription(
        name=f"{c.subscription}-10s", topic=c.topic, ack_deadline_seconds=10
    )
    [message_id] = c.publish(b"ack lost")
    first = c.subscriber.pull(subscription=f"{c.subscription}-10s", max_messages=1, timeout=10)
    with pytest.raises(exceptions.ServiceUnavailable):
        c.subscriber.acknowledge(
            subscription=f"{c.subscription}-10s",
            ack_ids=[first.received_messages[0].ack_id],
            retry=None,
        )
    time.sleep(10.5)
    again = c.subscriber.pull(subscription=f"{c.subscription}-10s", max_messages=1, timeout=10)
    expected = [message_id]
    assert expected == [r.message.message_id for r in again.received_messages]


def test_out_of_order_delivery_hands_later_messages_out_first(clients: Any) -> None:
    """out-of-order-delivery: every message arrives once, but not in the order published."""
    c = clients({"out-of-order-delivery": {"rate": 0.3}}, seed=5)
    published = c.publish(*(b"%02d" % i for i in range(30)))
    received: list[str] = []
    for _ in range(30):
        batch = c.pull(limit=5)
        c.ack(batch)
        received += [r.message.message_id for r in batch]
        if len(received) >= len(published):
            break
    expected = (sorted(published), True)
    assert expected == (sorted(received), received != published)


def test_an_unavailable_stream_hands_its_unsent_messages_back(clients: Any) -> None:
    """streaming-pull-unavailable: the stream ends with UNAVAILABLE; the message is still there."""
    c = clients({"streaming-pull-unavailable": {"rate": 1.0}})
    [message_id] = c.publish(b"kept")
    request = types.StreamingPullRequest(
        subscription=c.subscription, stream_ack_deadline_seconds=60
    )
    done = threading.Event()

    def requests() -> Iterator[Any]:
        # Keep the request side open as the client library does: a half-close is the client
        # leaving, and the stand-in then hands the lease back with OK instead of breaking.
        yield request
        done.wait(30)

    stream = c.subscriber.streaming_pull(requests=requests(), timeout=30)
    try:
        with pytest.raises(exceptions.ServiceUnavailable, match="unable to fulfill your request"):
            next(iter(stream))
    finally:
        done.set()
    expected = [message_id]
    assert expected == [r.message.message_id for r in c.pull()]


def test_a_stream_ends_with_unavailable_after_its_lifetime_even_when_idle(clients: Any) -> None:
    """streaming-pull-unavailable after_seconds: an idle stream is closed about a second in."""
    c = clients({"streaming-pull-unavailable": {"after_seconds": 1}})
    done = threading.Event()

    def requests() -> Iterator[Any]:
        yield types.StreamingPullRequest(
            subscription=c.subscription, stream_ack_deadline_seconds=60
        )
        done.wait(30)  # keep the request side open, as a subscriber does

    stream = c.subscriber.streaming_pull(requests=requests(), timeout=30)
    started = time.monotonic()
    with pytest.raises(exceptions.ServiceUnavailable):
        next(iter(stream))
    elapsed = time.monotonic() - started
    done.set()
    expected = True
    assert expected == (0.9 <= elapsed < 5), elapsed


def test_the_subscriber_client_reopens_streams_closed_after_a_second(clients: Any) -> None:
    """streaming-pull-unavailable after_seconds: subscribe() keeps consuming across the breaks."""
    c = clients({"streaming-pull-unavailable": {"after_seconds": 1}})
    seen: set[str] = set()
    arrived = threading.Condition()

    def callback(message: Any) -> None:
        with arrived:
            seen.add(message.message_id)
            arrived.notify_all()
        message.ack()

    client = pubsub_v1.SubscriberClient(
        transport=SubscriberGrpcTransport(channel=grpc.insecure_channel(c.endpoint))
    )
    future = client.subscribe(c.subscription, callback)
    published: list[str] = []
    for round_ in range(4):  # four rounds over ~3 s: each stream lives one second
        published += c.publish(*(b"r%d-%d" % (round_, i) for i in range(5)))
        time.sleep(0.8)
    wait_for(lambda: len(seen) >= len(published), 30, wake=arrived)
    running = not future.done()
    future.cancel()
    future.result(timeout=30)
    client.close()
    expected = (set(published), True)
    assert expected == (seen, running)


def test_a_refused_pull_leases_nothing(clients: Any) -> None:
    """pull-unavailable: Pull answers UNAVAILABLE, and a StreamingPull gets the message at once."""
    c = clients({"pull-unavailable": {"rate": 1.0}})
    [message_id] = c.publish(b"still there")
    with pytest.raises(exceptions.ServiceUnavailable, match="unable to fulfill your request"):
        c.subscriber.pull(subscription=c.subscription, max_messages=10, timeout=5, retry=None)
    done = threading.Event()

    def requests() -> Iterator[Any]:
        yield types.StreamingPullRequest(
            subscription=c.subscription, stream_ack_deadline_seconds=60
        )
        done.wait(30)

    stream = c.subscriber.streaming_pull(requests=requests(), timeout=30)
    try:
        response = next(iter(stream))
    finally:
        done.set()
    expected = ([message_id], 1)
    assert expected == (
        [r.message.message_id for r in response.received_messages],
        c.faults.pulls_refused,
    )


def test_the_official_client_retries_a_refused_pull(clients: Any) -> None:
    """pull-unavailable in a 1 s outage: Pull's default retry gets the message once it ends."""
    c = clients({"pull-unavailable": {"rate": 0.5, "seconds": 1}}, seed=_striking_seed())
    [message_id] = c.publish(b"after the outage")
    response = c.subscriber.pull(subscription=c.subscription, max_messages=10, timeout=30)
    expected = ([message_id], True)
    assert expected == (
        [r.message.message_id for r in response.received_messages],
        c.faults.pulls_refused >= 1,
    )


def _striking_seed() -> int:
    """Return a seed whose first pull-unavailable draw strikes at rate 0.5."""
    return next(s for s in range(100) if random.Random(f"{s}:pull-unavailable").random() < 0.5)


def test_a_refused_modify_ack_deadline_is_not_done_while_acks_go_through(clients: Any) -> None:
    """modify-ack-deadline-unavailable: the nack answers UNAVAILABLE, undone; the ack settles it."""
    c = clients({"modify-ack-deadline-unavailable": {"rate": 1.0}})
    c.publish(b"nack refused")
    first = c.pull()
    with pytest.raises(exceptions.ServiceUnavailable, match="unable to fulfill your request"):
        c.subscriber.modify_ack_deadline(
            subscription=c.subscription,
            ack_ids=[first[0].ack_id],
            ack_deadline_seconds=0,
            retry=None,
        )
    leased = c.pull()
    c.subscriber.acknowledge(subscription=c.subscription, ack_ids=[first[0].ack_id], retry=None)
    expected: tuple[list[Any], int] = ([], 1)
    assert expected == (leased, c.faults.modacks_refused)
