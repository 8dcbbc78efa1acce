"""A partition's bounded slice of a subscription: its descriptor, pull sizes and pulls.

What runs on the executor before the messages reach the partition function: the
``pubsub`` source (``pubsub_source``) plans these descriptors on the driver, and both it
and the processing source (``processing``) read them with ``pull_bounded``. The memory
bound a backlog of large messages needs is here (``pull_size``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import structlog
from plowline_core.errors import TransientError
from pyspark.sql.datasource import InputPartition

if TYPE_CHECKING:
    from plowline_cloud.pubsub.pulled import PulledMessage
    from plowline_cloud.pubsub.subscription import Subscription

_log = structlog.get_logger("plowline.loader.source")

# After a partition's first pull, one that waits this long for nothing: drained for now.
_DRAIN_TIMEOUT_S = 0.25
MAX_MESSAGE_BYTES = 10 * 1024 * 1024
"""Pub/Sub's largest message (data and attributes), rounded up: a pull's worst case each."""
PULL_CEILING_BYTES = 512 * 1024 * 1024
"""A task's pulls are sized so that its messages stay under this (or the byte budget)."""


@dataclass(frozen=True)
class PubSubPartition(InputPartition):
    """What one Spark task needs to pull a bounded slice of a subscription.

    Notes:
        Picklable (plain values only). ``prefetched`` holds the driver's probe delivery
        (partition 0 only); it counts against ``max_messages``.
    """

    index: int
    subscription: str
    emulator_host: str | None
    max_messages: int
    max_bytes: int
    pull_timeout_s: float
    ack_deadline_s: int
    prefetched: tuple[PulledMessage, ...] = ()


def pull_size(
    partition: PubSubPartition, count: int, size: int, largest: int = MAX_MESSAGE_BYTES
) -> int:
    """Return how many messages the next pull asks for, holding ``count`` of ``size`` bytes.

    Notes:
        Pure. At least 1; at most ``MAX_PULL``, the messages left in the budget, and what the
        bytes left under ``max(max_bytes, PULL_CEILING_BYTES)`` hold at ``largest`` bytes
        each: the largest message this partition has pulled so far, ``MAX_MESSAGE_BYTES``
        (Pub/Sub's limit) before its first pull. A backlog of large messages is met by a
        first pull of ~51 and stays under the ceiling; a backlog of small ones is pulled
        1,000 at a time after that first pull (a fixed 10 MB guess made every pull ~51
        messages: ~20 times the round trips). What this does not bound: large messages
        behind a pull of small ones (one pull can then exceed the ceiling, at most by
        ``MAX_PULL`` messages; the pull after it is sized by them).
    """
    from plowline_cloud.pubsub.subscription import MAX_PULL

    ceiling = max(partition.max_bytes, PULL_CEILING_BYTES)
    by_bytes = max(1, (ceiling - size) // max(1, largest))
    return max(1, min(partition.max_messages - count, MAX_PULL, by_bytes))


def pull_bounded(
    partition: PubSubPartition, weigh: Callable[[PulledMessage], int] | None = None
) -> Iterator[list[PulledMessage]]:
    """Yield the partition's deliveries pull by pull, each extended to the ack deadline.

    Notes:
        ``weigh`` says what a delivery counts against ``max_bytes`` and the pull ceiling
        (``pull_size``): its ``size`` by default; the ``pubsub-records`` source counts a
        compressed batch's opened records, what its task will hold.
        A pull still refused after its retries (``TransientError``) ends the slice like an
        empty pull: what was pulled goes through, the rest waits in Pub/Sub, the task does
        not fail. A receipt extension refused so is logged and the messages go on (the
        lease extender tries again; one whose lease lapses first is delivered again: a
        duplicate, which every mode absorbs, never a loss). Other errors fail the task.
    """
    from plowline_cloud.pubsub.subscription import Subscription

    subscription = Subscription(partition.subscription, partition.emulator_host)
    weight = weigh or _size
    count = len(partition.prefetched)
    size = sum(map(weight, partition.prefetched))  # weighed before it is yielded, as pulls are
    if partition.prefetched:
        # The driver's probe was leased when planned; planning a cold batch can outlast
        # a short ack deadline, so extend it on receipt like every pulled message.
        _extend_on_receipt(subscription, partition.prefetched, partition.ack_deadline_s)
        yield list(partition.prefetched)
    largest: int | None = None  # the probe is one message: no guide to the backlog's sizes
    timeout_s = partition.pull_timeout_s
    while count < partition.max_messages and size < partition.max_bytes:
        try:
            asked = pull_size(partition, count, size, largest or MAX_MESSAGE_BYTES)
            pulled = subscription.pull(asked, timeout_s)
        except TransientError as error:
            _log.warning(
                "pull keeps failing: this partition ends here, the rest waits in Pub/Sub",
                subscription=partition.subscription,
                pulled=count,
                error=str(error),
            )
            return
        if not pulled:
            return
        # Receipt extension: the rows still have to reach the sink and its lease extender.
        _extend_on_receipt(subscription, pulled, partition.ack_deadline_s)
        count += len(pulled)
        sizes = [weight(message) for message in pulled]
        size += sum(sizes)
        largest = max(largest or 0, *sizes)
        timeout_s = min(partition.pull_timeout_s, _DRAIN_TIMEOUT_S)
        yield pulled


def _size(message: PulledMessage) -> int:
    return message.size


def _extend_on_receipt(
    subscription: Subscription, messages: Sequence[PulledMessage], seconds: int
) -> None:
    """Extend the leases of messages just received; a transient refusal is logged only."""
    try:
        subscription.modack([m.ack_id for m in messages], seconds)
    except TransientError as error:
        _log.warning(
            "receipt extension failed: the messages go on with their current lease",
            subscription=subscription.path,
            ack_ids=len(messages),
            error=str(error),
        )
