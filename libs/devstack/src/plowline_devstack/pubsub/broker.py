"""The emulator's state: topics, subscriptions, fan-out of published messages.

Notes:
    Admin changes take the broker lock and replace the topic → backlogs fan-out map
    wholesale (copy on write), so the publish hot path reads it without locking.
    A message is journalled before it is enqueued, so an ack can never reach the
    journal before the message it deletes.
    Messages published before a subscription exists are not delivered to it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import grpc
from google.pubsub_v1 import types

from plowline_devstack.faults.pubsub import NO_FAULTS, PubSubFaults
from plowline_devstack.pubsub import names
from plowline_devstack.pubsub.backlog import Backlog, Entry, Holder, LeasedEntry
from plowline_devstack.pubsub.journal import Journal, NullJournal
from plowline_devstack.pubsub.status import StatusError

# Raw protobuf classes behind the proto-plus types: proto-plus marshals on every field
# access, which the publish and pull hot paths cannot afford.
TopicPb: Any = types.Topic.pb()
SubscriptionPb: Any = types.Subscription.pb()
MessagePb: Any = types.PubsubMessage.pb()

DEFAULT_ACK_DEADLINE = 10
MIN_ACK_DEADLINE, MAX_ACK_DEADLINE = 10, 600
_DEFAULT_MAX_ATTEMPTS = 5
_RETENTION_SECONDS = 7 * 24 * 3600
_ACTIVE = 1


def _invalid(message: str) -> StatusError:
    return StatusError(grpc.StatusCode.INVALID_ARGUMENT, message)


def _page(items: list[str], page_size: int, token: str) -> tuple[list[str], str]:
    start = 0
    if token:
        start = next((i for i, name in enumerate(items) if name > token), len(items))
    size = page_size if page_size > 0 else 1000
    chunk = items[start : start + size]
    more = start + size < len(items)
    return chunk, chunk[-1] if more and chunk else ""


class Broker:
    """Hold topics and subscriptions; publish, pull, ack and modack messages."""

    def __init__(
        self,
        journal: Journal | None = None,
        clock: Callable[[], float] = time.monotonic,
        faults: PubSubFaults = NO_FAULTS,
    ) -> None:
        self._journal: Journal = journal or NullJournal()
        self._clock = clock
        self.faults = faults
        self._lock = threading.Lock()
        self._topics: dict[str, Any] = {}
        self._subs: dict[str, Any] = {}
        self._backlogs: dict[str, Backlog] = {}
        self._fanout: dict[str, tuple[Backlog, ...]] = {}
        self._next_id = 1
        self._restore()

    # -- topics -----------------------------------------------------------------
    def create_topic(self, topic: Any) -> Any:
        """Create ``topic``; ALREADY_EXISTS if its name is taken."""
        names.topic_name(topic.name)
        with self._lock:
            if topic.name in self._topics:
                raise StatusError(grpc.StatusCode.ALREADY_EXISTS, "Topic already exists")
            self._topics[topic.name] = topic
            self._journal.put_topic(topic.name, topic.SerializeToString())
        return topic

    def get_topic(self, name: str) -> Any:
        """Return the topic called ``name``; NOT_FOUND if there is none."""
        names.topic_name(name)
        topic = self._topics.get(name)
        if topic is None:
            raise names.not_found(name)
        return topic

    def list_topics(self, project: str, page_size: int, token: str) -> tuple[list[Any], str]:
        """Return one page of the project's topics and the next page token."""
        prefix = names.project_name(project) + "/topics/"
        found = sorted(n for n in list(self._topics) if n.startswith(prefix))
        chunk, next_token = _page(found, page_size, token)
        return [self._topics[n] for n in chunk if n in self._topics], next_token

    def delete_topic(self, name: str) -> None:
        """Delete a topic; its subscriptions stay, attached to ``_deleted-topic_``."""
        names.topic_name(name)
        with self._lock:
            if self._topics.pop(name, None) is None:
                raise names.not_found(name)
            self._journal.delete_topic(name)
            for sub in self._subs.values():
                if sub.topic == name:
                    sub.topic = names.DELETED_TOPIC
                    self._journal.put_subscription(sub.name, sub.SerializeToString())
            self._rebuild_fanout()

    def topic_subscriptions(self, topic: str, page_size: int, token: str) -> tuple[list[str], str]:
        """Return one page of the names of the subscriptions attached to ``topic``."""
        self.get_topic(topic)
        found = sorted(s.name for s in list(self._subs.values()) if s.topic == topic)
        return _page(found, page_size, token)

    def publish(self, topic: str, messages: Sequence[Any]) -> list[str]:
        """Stamp ids and publish times on ``messages`` and enqueue them; return the ids."""
        if topic not in self._topics:
            names.topic_name(topic)
            raise names.not_found(topic)
        if not messages:
            raise _invalid("The request contains no messages.")
        if any(not m.data and not m.attributes for m in messages):
            raise _invalid(
                "One or more messages in the publish request is empty. Each message must "
                "contain either non-empty data, or at least one attribute."
            )
        with self._lock:
            first = self._next_id
            self._next_id += len(messages)
        now_ns = time.time_ns()
        ids = [str(first + i) for i in range(len(messages))]
        for message, message_id in zip(messages, ids, strict=True):
            message.message_id = message_id
            message.publish_time.FromNanoseconds(now_ns)
        backlogs = self._fanout.get(topic, ())
        rows: list[tuple[str, int, bytes]] = []
        if backlogs and not isinstance(self._journal, NullJournal):
            blobs = [m.SerializeToString() for m in messages]
            rows = [(b.name, first + i, blob) for b in backlogs for i, blob in enumerate(blobs)]
        self._journal.add_messages(rows, first + len(messages))
        if backlogs:
            sizes = [m.ByteSize() for m in messages]
            for backlog in backlogs:
                backlog.enqueue([Entry(m, s) for m, s in zip(messages, sizes, strict=True)])
        return ids

    # -- subscriptions ----------------------------------------------------------
    def create_subscription(self, sub: Any) -> Any:
        """Create ``sub`` with the service's defaults filled in."""
        names.subscription_name(sub.name)
        names.topic_name(sub.topic)
        self._check_supported(sub)
        if sub.ack_deadline_seconds == 0:
            sub.ack_deadline_seconds = DEFAULT_ACK_DEADLINE
        if not MIN_ACK_DEADLINE <= sub.ack_deadline_seconds <= MAX_ACK_DEADLINE:
            raise _invalid(
                f"Invalid ack deadline given: {sub.ack_deadline_seconds} seconds. "
                f"The ack deadline must be between {MIN_ACK_DEADLINE} and {MAX_ACK_DEADLINE} seconds."
            )
        if not sub.HasField("message_retention_duration"):
            sub.message_retention_duration.seconds = _RETENTION_SECONDS
        sub.state = _ACTIVE
        with self._lock:
            if sub.name in self._subs:
                raise StatusError(grpc.StatusCode.ALREADY_EXISTS, "Subscription already exists")
            if sub.topic not in self._topics:
                raise names.not_found(sub.topic)
            self._check_dead_letter(sub)
            self._add_subscription(sub)
            self._journal.put_subscription(sub.name, sub.SerializeToString())
        return sub

    def get_subscription(self, name: str) -> Any:
        """Return the subscription called ``name``; NOT_FOUND if there is none."""
        names.subscription_name(name)
        sub = self._subs.get(name)
        if sub is None:
            raise names.not_found(name)
        return sub

    def list_subscriptions(self, project: str, page_size: int, token: str) -> tuple[list[Any], str]:
        """Return one page of the project's subscriptions and the next page token."""
        prefix = names.project_name(project) + "/subscriptions/"
        found = sorted(n for n in list(self._subs) if n.startswith(prefix))
        chunk, next_token = _page(found, page_size, token)
        return [self._subs[n] for n in chunk if n in self._subs], next_token

    def delete_subscription(self, name: str) -> None:
        """Delete a subscription, its messages, and end its pulls with NOT_FOUND."""
        names.subscription_name(name)
        with self._lock:
            if self._subs.pop(name, None) is None:
                raise names.not_found(name)
            backlog = self._backlogs.pop(name)
            self._journal.delete_subscription(name)
            self._rebuild_fanout()
        backlog.drop()

    def backlog(self, name: str) -> Backlog:
        """Return the backlog of subscription ``name``; NOT_FOUND if there is none."""
        backlog = self._backlogs.get(name)
        if backlog is None:
            names.subscription_name(name)
            raise names.not_found(name)
        return backlog

    def ack_deadline(self, name: str) -> int:
        """Return the subscription's configured ack deadline in seconds."""
        return int(self.get_subscription(name).ack_deadline_seconds)

    def ordered(self, name: str) -> bool:
        """Return whether the subscription asked for message ordering."""
        return bool(self.get_subscription(name).enable_message_ordering)

    def reports_attempts(self, name: str) -> bool:
        """Return whether ReceivedMessage.delivery_attempt is set (dead-letter policy)."""
        sub = self._subs.get(name)
        return sub is not None and sub.HasField("dead_letter_policy")

    # -- delivery -----------------------------------------------------------------
    def pull(
        self,
        name: str,
        limit: int,
        deadline_s: float,
        wait: float,
        holder: Holder | None = None,
        stop: Callable[[], bool] = lambda: False,
    ) -> list[LeasedEntry]:
        """Lease up to ``limit`` messages of subscription ``name``."""
        backlog = self.backlog(name)
        batch = backlog.pull(limit, deadline_s, wait, holder, stop, max_bytes=4 << 20)
        if backlog.max_attempts:
            self._dead_letter(name, backlog.take_dead())
        return batch

    def acknowledge(self, name: str, ack_ids: Sequence[str]) -> None:
        """Acknowledge ``ack_ids``; unknown and expired ids are ignored."""
        done = self.backlog(name).acknowledge(ack_ids)
        if done and not isinstance(self._journal, NullJournal):
            self._journal.remove_messages([(name, int(e.message.message_id)) for e in done])

    def modify(self, name: str, ack_ids: Sequence[str], seconds: int) -> None:
        """Move the ack deadlines of ``ack_ids``; 0 means nack (redeliver now)."""
        if not 0 <= seconds <= MAX_ACK_DEADLINE:
            raise _invalid(
                f"Invalid ack deadline given: {seconds} seconds. "
                f"The ack deadline must be between 0 and {MAX_ACK_DEADLINE} seconds."
            )
        self.backlog(name).modify(ack_ids, seconds)

    def close(self) -> None:
        """Release every puller and flush the journal."""
        for backlog in list(self._backlogs.values()):
            backlog.wake()
        self._journal.close()

    # -- internals ----------------------------------------------------------------
    def _restore(self) -> None:
        snapshot = self._journal.load()
        self._next_id = snapshot.next_id
        for blob in snapshot.topics:
            topic = TopicPb.FromString(blob)
            self._topics[topic.name] = topic
        for blob in snapshot.subscriptions:
            self._add_subscription(SubscriptionPb.FromString(blob))
        for sub_name, blob in snapshot.messages:
            backlog = self._backlogs.get(sub_name)
            if backlog is not None:
                message = MessagePb.FromString(blob)
                backlog.enqueue([Entry(message, message.ByteSize())])
        self._rebuild_fanout()

    def _add_subscription(self, sub: Any) -> None:
        attempts = 0
        if sub.HasField("dead_letter_policy"):
            attempts = sub.dead_letter_policy.max_delivery_attempts or _DEFAULT_MAX_ATTEMPTS
        self._subs[sub.name] = sub
        self._backlogs[sub.name] = Backlog(
            sub.name, max_attempts=attempts, clock=self._clock, faults=self.faults
        )
        self._rebuild_fanout()

    def _rebuild_fanout(self) -> None:
        fanout: dict[str, list[Backlog]] = {}
        for sub in self._subs.values():
            fanout.setdefault(sub.topic, []).append(self._backlogs[sub.name])
        self._fanout = {topic: tuple(backlogs) for topic, backlogs in fanout.items()}

    @staticmethod
    def _check_supported(sub: Any) -> None:
        unsupported = {
            "push subscriptions": sub.push_config.push_endpoint,
            "filters": sub.filter,
            "exactly-once delivery": sub.enable_exactly_once_delivery,
            "BigQuery subscriptions": sub.bigquery_config.table,
            "Cloud Storage subscriptions": sub.cloud_storage_config.bucket,
        }
        for feature, value in unsupported.items():
            if value:
                raise StatusError(
                    grpc.StatusCode.UNIMPLEMENTED,
                    f"The plowline emulator does not support {feature}.",
                )

    def _check_dead_letter(self, sub: Any) -> None:
        if not sub.HasField("dead_letter_policy"):
            return
        policy = sub.dead_letter_policy
        if policy.max_delivery_attempts == 0:
            policy.max_delivery_attempts = _DEFAULT_MAX_ATTEMPTS
        if not 5 <= policy.max_delivery_attempts <= 100:
            raise _invalid("max_delivery_attempts must be between 5 and 100.")
        names.topic_name(policy.dead_letter_topic)
        if policy.dead_letter_topic not in self._topics:
            raise names.not_found(policy.dead_letter_topic)

    def _dead_letter(self, name: str, dead: list[Entry]) -> None:
        if not dead:
            return
        sub = self._subs.get(name)
        if not isinstance(self._journal, NullJournal):
            self._journal.remove_messages([(name, int(e.message.message_id)) for e in dead])
        if sub is None or sub.dead_letter_policy.dead_letter_topic not in self._topics:
            return
        forwarded = []
        for entry in dead:
            message = MessagePb(data=entry.message.data, ordering_key=entry.message.ordering_key)
            message.attributes.update(entry.message.attributes)
            message.attributes["CloudPubSubDeadLetterSourceSubscription"] = names.short_id(name)
            message.attributes["CloudPubSubDeadLetterSourceDeliveryCount"] = str(entry.attempts)
            forwarded.append(message)
        self.publish(sub.dead_letter_policy.dead_letter_topic, forwarded)
