"""A tap on the failed-inserts topic: which events went through the repeater during a chaos run.

A duplicate row is explained differently when its event was refused by the loader first
(the repeater re-inserted it, and the loader may have written it again after a
redelivery) than when it never left the loader. :class:`FailedInsertTap` subscribes a
subscription of its own to the failed-inserts topic before any event is published and,
at the end, drains it and returns the event ids it saw.
"""

from __future__ import annotations

import contextlib
import re

from google.api_core.exceptions import AlreadyExists, DeadlineExceeded
from plowline_cloud.clients import subscriber_client

from plowline_devstack.stack.lifecycle import LocalStack

TAP_SUBSCRIPTION = "failed-inserts-chaos-tap"
_TOPIC = "failed-inserts"
_UUID = re.compile(rb"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_PULL_TIMEOUT_S = 5.0


class FailedInsertTap:
    """A subscription of our own on the failed-inserts topic."""

    def __init__(self, stack: LocalStack) -> None:
        self._stack = stack
        project = stack.project
        self._path = f"projects/{project}/subscriptions/{TAP_SUBSCRIPTION}"
        with (
            subscriber_client(stack.endpoints.pubsub_target) as subscriber,
            contextlib.suppress(AlreadyExists),
        ):
            subscriber.create_subscription(
                name=self._path, topic=f"projects/{project}/topics/{_TOPIC}", timeout=10.0
            )

    def event_ids(self) -> set[str]:
        """Drain the tap; return every id (lower case) its failed inserts name."""
        found: set[str] = set()
        with subscriber_client(self._stack.endpoints.pubsub_target) as subscriber:
            while True:
                try:
                    reply = subscriber.pull(
                        subscription=self._path, max_messages=1000, timeout=_PULL_TIMEOUT_S
                    )
                except DeadlineExceeded:
                    break
                if not reply.received_messages:
                    break
                for received in reply.received_messages:
                    data = received.message.data
                    found |= {match.decode().lower() for match in _UUID.findall(data)}
                subscriber.acknowledge(
                    subscription=self._path,
                    ack_ids=[received.ack_id for received in reply.received_messages],
                    timeout=10.0,
                )
        return found
