"""/healthz of a real dead-letter writer: 503 when it holds bad rows it cannot write, 200 otherwise.

Each test uses a topic and subscription of its own, so messages nacked here never reach
another test's writer.
"""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import orjson
from plowline_cloud.clients import publisher_client, subscriber_client
from support.timing import wait_for, wait_until

STALL = "4"
_ROW = orjson.dumps(
    {
        "schema": "iglu:com.snowplowanalytics.snowplow.badrows/loader_parsing_error/jsonschema/2-0-0",
        "data": {"payload": "liveness"},
    }
)


def _channel(stack: Any) -> tuple[str, str]:
    """Create a topic and its subscription for this test; return both paths."""
    name = f"liveness-{uuid.uuid4().hex[:8]}"
    topic = f"projects/{stack.project}/topics/{name}"
    subscription = f"projects/{stack.project}/subscriptions/{name}"
    publisher_client(stack.endpoints.pubsub_target).create_topic(name=topic)
    subscriber = subscriber_client(stack.endpoints.pubsub_target)
    subscriber.create_subscription(name=subscription, topic=topic, ack_deadline_seconds=10)
    subscriber.close()
    return topic, subscription


def _start(
    start_service: Callable[..., Any], config: Path, sub: str, bucket: str
) -> tuple[Any, int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    service = start_service(
        "plowline_deadletter.cli", "run", "--config", str(config), "--badRowsSub", sub,
        "--bucket", bucket, "--window", "1", "--stallTimeout", STALL, "--port", str(port),
    )  # fmt: skip
    return service, port


def _health(port: int) -> int | None:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code
    except httpx.HTTPError:
        return None


def test_writer_that_cannot_write_fails_liveness(
    local_stack: Any,
    config_files: tuple[Path, Path],
    start_service: Callable[..., Any],
) -> None:
    """Live while idle; 503 once it has held rows longer than --stallTimeout without writing any."""
    topic, sub = _channel(local_stack)
    missing = f"gs://no-such-bucket-{uuid.uuid4().hex[:8]}"
    service, port = _start(start_service, config_files[0], sub, missing)
    idle = wait_until(lambda: _health(port), 30)
    publisher_client(local_stack.endpoints.pubsub_target).publish(topic, _ROW).result(30)
    stalled = wait_for(lambda: _health(port) == 503, 60)
    body = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).json()
    service.stop()
    expected = (200, True, False, True)
    assert expected == (
        idle,
        stalled,
        body["alive"],
        body["secondsWithoutProgress"] > float(STALL),
    ), service.tail()


def test_writer_that_writes_stays_live(
    local_stack: Any,
    config_files: tuple[Path, Path],
    start_service: Callable[..., Any],
) -> None:
    """A writer that files its rows stays live well past --stallTimeout, rows or none."""
    topic, sub = _channel(local_stack)
    service, port = _start(
        start_service, config_files[0], sub, f"gs://plowline-bad-rows/live-{uuid.uuid4().hex[:8]}"
    )
    wait_for(lambda: _health(port), 30)
    publisher = publisher_client(local_stack.endpoints.pubsub_target)
    answers = []
    for _ in range(8):  # 8 s, twice the stall timeout, with a row every second
        publisher.publish(topic, _ROW).result(30)
        time.sleep(1)
        answers.append(_health(port))
    service.stop()
    expected = [200] * 8
    assert expected == answers, service.tail()


def test_writer_whose_subscription_is_deleted_exits_1(
    local_stack: Any,
    config_files: tuple[Path, Path],
    start_service: Callable[..., Any],
) -> None:
    """Its subscription deleted under it, the writer says why and exits 1 within 60 s."""
    _, sub = _channel(local_stack)
    service, port = _start(
        start_service, config_files[0], sub, f"gs://plowline-bad-rows/gone-{uuid.uuid4().hex[:8]}"
    )
    wait_for(lambda: _health(port) == 200, 30)
    subscriber = subscriber_client(local_stack.endpoints.pubsub_target)
    subscriber.delete_subscription(subscription=sub)
    subscriber.close()
    code = service.process.wait(60)
    expected = (1, True)
    assert expected == (code, "dead-letter writer stream ended" in service.tail()), service.tail()
