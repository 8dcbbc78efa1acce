"""Settling deliveries once the writes are durable: a failing ack never fails the task."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from plowline_cloud.clients import subscriber_client
from plowline_cloud.pubsub.pulled import PulledMessage
from plowline_cloud.pubsub.subscription import Subscription
from plowline_loader.source.acking import AckingPartition, HandBack, Settlement

if TYPE_CHECKING:
    from conftest import Channel


def _rows(channel: Channel, count: int) -> list[PulledMessage]:
    """Pull ``count`` deliveries, as the processing source hands them to its tasks."""
    subscription = Subscription(channel.subscription, channel.endpoint)
    pulled: list[PulledMessage] = []
    while len(pulled) < count:
        pulled += subscription.pull(count - len(pulled), 5.0)
    return pulled


@dataclass
class DurableThenUnreachable:
    """A processor whose writes are durable, after which the subscription is gone (acks fail)."""

    endpoint: str
    subscription: str
    calls: list[int] = field(default_factory=list)

    def __call__(self, rows: list[PulledMessage]) -> None:
        """Record the rows as written, then delete the subscription their acks go to."""
        self.calls.append(len(rows))
        subscriber_client(self.endpoint).delete_subscription(
            request={"subscription": self.subscription}
        )


def test_a_failing_ack_is_counted_and_does_not_fail_the_task(channel: Channel) -> None:
    """Acks refused after the writes were durable: the partition returns, counting 20 unsettled."""
    channel.publish(20)
    rows = _rows(channel, 20)
    processor = DurableThenUnreachable(channel.endpoint, channel.subscription)

    settlement = AckingPartition(processor, channel.endpoint, 10, 3.0)(rows)

    assert (Settlement(0, 0, 20), [20]) == (settlement, processor.calls)


def test_durable_deliveries_are_acked_and_the_rest_nacked(channel: Channel) -> None:
    """A processor handing back 5 of 20: 15 acked, 5 nacked, nothing left unsettled."""
    channel.publish(20)
    rows = _rows(channel, 20)
    handed_back = {row.ack_id for row in rows[:5]}

    settlement = AckingPartition(lambda _: handed_back, channel.endpoint, 10, 3.0)(rows)

    assert Settlement(15, 5, 0) == settlement


def test_kept_deliveries_are_left_leased_for_the_caller(channel: Channel) -> None:
    """Of 10 deliveries, 3 kept (one also named to nack): 7 acked, the 3 left leased, not redelivered."""
    channel.publish(10)
    rows = _rows(channel, 10)
    kept = [row.ack_id for row in rows[:3]]
    hand_back = HandBack(now=kept[:1], kept=kept)

    settlement = AckingPartition(lambda _: hand_back, channel.endpoint, 10, 3.0)(rows)

    expected = (Settlement(7, 0, 0), 3, [])
    assert expected == (settlement, channel.outstanding(), _pull_now(channel))


def test_a_split_delivery_is_leased_and_settled_once(channel: Channel) -> None:
    """Five rows under one ack id (a batch's records) and a plain one: two ack ids acked."""
    channel.publish(2)
    split, plain = _rows(channel, 2)
    records = [split._replace(message_id=f"{split.message_id}#{n}") for n in range(5)]

    settlement = AckingPartition(lambda _: None, channel.endpoint, 10, 3.0)([*records, plain])

    assert (Settlement(2, 0, 0), 0) == (settlement, channel.outstanding())


def _pull_now(channel: Channel) -> list[str]:
    """Return the message ids a pull gets now (nothing leased is delivered)."""
    subscription = Subscription(channel.subscription, channel.endpoint)
    pulled = subscription.pull(10, 1.0)
    subscription.nack([message.ack_id for message in pulled])
    return [message.message_id for message in pulled]
