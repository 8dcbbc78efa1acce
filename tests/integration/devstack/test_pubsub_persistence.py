"""The Pub/Sub emulator keeps its state across a restart with ``--data-dir``."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.pubsub_v1 import PublisherClient, SubscriberClient, types
from google.pubsub_v1.services.publisher.transports import PublisherGrpcTransport
from google.pubsub_v1.services.subscriber.transports import SubscriberGrpcTransport
from plowline_devstack.pubsub import wait_until_ready
from plowline_devstack.stack.servers import free_port

TOPIC = "projects/plowline-test/topics/durable-topic"
SUB = "projects/plowline-test/subscriptions/durable-sub"


class _Process:
    """The emulator as ``python -m plowline_devstack.pubsub``, stopped with SIGTERM."""

    def __init__(self, port: int, data_dir: Path) -> None:
        self.endpoint = f"127.0.0.1:{port}"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "plowline_devstack.pubsub", "--host", "127.0.0.1",
             "--port", str(port), "--data-dir", str(data_dir), "--log-level", "warning"],
        )  # fmt: skip
        wait_until_ready("127.0.0.1", port, timeout=30)

    def stop(self) -> int:
        """Send SIGTERM and return the exit status."""
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=30)


@pytest.fixture
def emulator(tmp_path: Path) -> tuple[int, Path]:
    """A free port and a data directory; the test starts and stops the process."""
    return free_port(), tmp_path


def _clients(endpoint: str) -> tuple[PublisherClient, SubscriberClient]:
    return (
        PublisherClient(transport=PublisherGrpcTransport(channel=grpc.insecure_channel(endpoint))),
        SubscriberClient(
            transport=SubscriberGrpcTransport(channel=grpc.insecure_channel(endpoint))
        ),
    )


def _pull_all(subscriber: SubscriberClient) -> list[Any]:
    response = subscriber.pull(subscription=SUB, max_messages=100, timeout=10)
    return list(response.received_messages)


def test_unacked_messages_survive_a_restart(emulator: tuple[int, Path]) -> None:
    """Messages published and left unacked are pullable after SIGTERM and restart; acked ones are not."""
    port, data_dir = emulator
    first = _Process(port, data_dir)
    publisher, subscriber = _clients(first.endpoint)
    publisher.create_topic(name=TOPIC)
    subscriber.create_subscription(name=SUB, topic=TOPIC)
    messages = [types.PubsubMessage(data=b"m%d" % i) for i in range(3)]
    ids = list(publisher.publish(topic=TOPIC, messages=messages).message_ids)
    acked = next(m for m in _pull_all(subscriber) if m.message.message_id == ids[0])
    subscriber.acknowledge(subscription=SUB, ack_ids=[acked.ack_id])
    publisher.transport.close()
    subscriber.transport.close()
    expected = 0
    assert expected == first.stop()

    second = _Process(port, data_dir)
    publisher, subscriber = _clients(second.endpoint)
    try:
        state = (
            publisher.get_topic(topic=TOPIC).name,
            subscriber.get_subscription(subscription=SUB).topic,
            sorted(m.message.message_id for m in _pull_all(subscriber)),
        )
    finally:
        publisher.transport.close()
        subscriber.transport.close()
        second.stop()
    assert (TOPIC, TOPIC, sorted(ids[1:])) == state
