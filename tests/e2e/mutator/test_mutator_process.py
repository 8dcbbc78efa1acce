"""``plowline-mutator serve`` as a real process on the local stack: it answers, stops cleanly,
and is no longer alive once its types subscription is gone."""

from __future__ import annotations

import signal
import time
import uuid
from pathlib import Path

from google.cloud.pubsub_v1 import SubscriberClient
from plowline_cloud.clients import publisher_client, subscriber_client
from plowline_devstack.stack.lifecycle import LocalStack
from support.mutator import answers, mutator_process

SERVE_FLAGS = ("--insecure-no-auth",)


def test_serve_exits_zero_after_sigterm(local_stack: LocalStack, tmp_path: Path) -> None:
    """SIGTERM stops serve (API and listener) gracefully with exit code 0, not by the signal."""
    with mutator_process(
        local_stack, tmp_path, "serve", *SERVE_FLAGS, ready=answers("/healthz")
    ) as serving:
        serving.process.send_signal(signal.SIGTERM)
        code = serving.process.wait(timeout=30)

    expected = 0
    assert expected == code


def test_serve_whose_subscription_is_deleted_is_no_longer_alive(
    local_stack: LocalStack, tmp_path: Path
) -> None:
    """Deleting the types subscription under serve ends it with exit code 1 within 60 s (it was 200 for ever)."""
    name, subscriber = _own_types_subscription(local_stack)
    try:
        with mutator_process(
            local_stack, tmp_path, "serve", *SERVE_FLAGS, ready=answers("/healthz"),
            typesTopic=name, typesSubscription=name,
        ) as serving:  # fmt: skip
            subscriber.delete_subscription(subscription=_subscription(local_stack, name))
            deleted = time.monotonic()
            code = serving.process.wait(timeout=60)
            took = time.monotonic() - deleted
            logged = serving.logged()
    finally:
        subscriber.close()
    expected = (1, True)
    assert expected == (code, took < 60), logged[-3000:]


def test_listen_whose_subscription_is_deleted_exits_1(
    local_stack: LocalStack, tmp_path: Path
) -> None:
    """Deleting the types subscription under listen ends it with exit code 1 within 60 s."""
    name, subscriber = _own_types_subscription(local_stack)
    try:
        with mutator_process(
            local_stack, tmp_path, "listen", ready=lambda running: "listening" in running.logged(),
            typesTopic=name, typesSubscription=name,
        ) as listening:  # fmt: skip
            subscriber.delete_subscription(subscription=_subscription(local_stack, name))
            code = listening.process.wait(timeout=60)
            logged = listening.logged()
    finally:
        subscriber.close()
    expected = (1, True)
    assert expected == (code, "mutator listener stream ended" in logged), logged[-3000:]


def _subscription(stack: LocalStack, name: str) -> str:
    return f"projects/{stack.project}/subscriptions/{name}"


def _own_types_subscription(stack: LocalStack) -> tuple[str, SubscriberClient]:
    """Create a types topic and subscription of a fresh name; return it and the client."""
    name = f"types-gone-{uuid.uuid4().hex[:8]}"
    topic = f"projects/{stack.project}/topics/{name}"
    target = stack.endpoints.pubsub_target
    publisher_client(target).create_topic(name=topic)
    subscriber = subscriber_client(target)
    subscriber.create_subscription(name=_subscription(stack, name), topic=topic)
    return name, subscriber
