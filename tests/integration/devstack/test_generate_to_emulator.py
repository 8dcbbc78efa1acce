"""`plowline dev generate --to topic --pubsub HOST:PORT` feeds an emulator it did not start.

That is how the README feeds the docker compose stack (its Pub/Sub on 127.0.0.1:8085).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from google.pubsub_v1 import PublisherClient, SubscriberClient
from google.pubsub_v1.services.publisher.transports import PublisherGrpcTransport
from google.pubsub_v1.services.subscriber.transports import SubscriberGrpcTransport
from plowline_devstack.cli import main
from plowline_devstack.pubsub import PubSubEmulator, wait_until_ready

PROJECT = "compose-like"


@pytest.fixture
def emulator() -> Iterator[str]:
    """A Pub/Sub emulator started outside `plowline dev up`, with topic `enriched`."""
    server = PubSubEmulator("127.0.0.1", 0)
    port = server.start()
    wait_until_ready("127.0.0.1", port, timeout=10)
    target = f"127.0.0.1:{port}"
    publisher = PublisherClient(
        transport=PublisherGrpcTransport(channel=grpc.insecure_channel(target))
    )
    publisher.create_topic(name=f"projects/{PROJECT}/topics/enriched")
    yield target
    server.stop()


def test_generate_publishes_to_a_named_emulator(emulator: str, tmp_path: Path) -> None:
    """Every generated event reaches the topic of the emulator named by --pubsub; no state file needed."""
    subscriber = SubscriberClient(
        transport=SubscriberGrpcTransport(channel=grpc.insecure_channel(emulator))
    )
    subscription = f"projects/{PROJECT}/subscriptions/check"
    subscriber.create_subscription(name=subscription, topic=f"projects/{PROJECT}/topics/enriched")
    code = main(
        [
            "dev", "generate", "--count", "25", "--seed", "7", "--rate", "0", "--to", "topic",
            "--pubsub", emulator, "--project", PROJECT, "--data-dir", str(tmp_path),
        ]
    )  # fmt: skip
    received = 0
    for _ in range(20):
        response = subscriber.pull(subscription=subscription, max_messages=100, timeout=5)
        received += len(response.received_messages)
        if received >= 25:
            break
    expected = (0, 25)
    assert expected == (code, received)
