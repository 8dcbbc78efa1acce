"""Specification of a partition's pull sizes: a backlog of large messages stays bounded."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from plowline_cloud.pubsub.subscription import MAX_PULL
from plowline_loader.source.pulls import (
    MAX_MESSAGE_BYTES,
    PULL_CEILING_BYTES,
    PubSubPartition,
    pull_size,
)

MiB = 1024 * 1024


def _partition(max_messages: int = 10_000, max_bytes: int = 16 * MiB) -> PubSubPartition:
    return PubSubPartition(0, "projects/p/subscriptions/s", None, max_messages, max_bytes, 1.0, 60)


def _drain(partition: PubSubPartition, sizes: list[int], rest: int = MAX_MESSAGE_BYTES) -> int:
    """Run pull_bounded's loop against a backlog that answers each pull in full; return bytes.

    The backlog is ``sizes``, then messages of ``rest`` bytes for ever.
    """
    count = size = largest = 0
    backlog = iter(sizes)
    while count < partition.max_messages and size < partition.max_bytes:
        asked = pull_size(partition, count, size, largest or MAX_MESSAGE_BYTES)
        pulled = [next(backlog, rest) for _ in range(asked)]
        count, size, largest = count + len(pulled), size + sum(pulled), max(largest, *pulled)
    return size


def _pulls(partition: PubSubPartition, message_size: int) -> int:
    """How many pulls drain the partition's budget from a backlog of one message size."""
    count = size = largest = pulls = 0
    while count < partition.max_messages and size < partition.max_bytes:
        asked = pull_size(partition, count, size, largest or MAX_MESSAGE_BYTES)
        count, size, largest, pulls = (
            count + asked,
            size + asked * message_size,
            message_size,
            pulls + 1,
        )
    return pulls


def test_a_backlog_of_the_largest_messages_stays_under_the_ceiling() -> None:
    """1,000 messages of 10 MB each no longer come in one pull: the task holds ~512 MiB."""
    held = _drain(_partition(), [])
    assert held <= PULL_CEILING_BYTES + MAX_MESSAGE_BYTES


def test_the_first_pull_asks_for_what_the_ceiling_holds_at_10_mb() -> None:
    """An empty partition asks for as many messages as the ceiling holds at 10 MB each."""
    expected = PULL_CEILING_BYTES // MAX_MESSAGE_BYTES
    assert expected == pull_size(_partition(), 0, 0)


def test_small_messages_come_a_thousand_to_a_pull_after_the_first() -> None:
    """Once 2 KB messages were seen, a pull asks for MAX_PULL of them again."""
    expected = MAX_PULL
    assert expected == pull_size(_partition(), 51, 51 * 2048, largest=2048)


def test_a_budget_of_small_messages_takes_a_handful_of_pulls() -> None:
    """10,000 messages of 1.6 KB: 11 pulls (51, then 1,000 at a time), not ~200 of 51."""
    expected = 11
    assert expected == _pulls(_partition(), 1600)


def test_a_budget_above_the_ceiling_raises_it() -> None:
    """maxBytesPerPartition larger than the ceiling sizes pulls by itself (up to MAX_PULL)."""
    expected = MAX_PULL
    assert expected == pull_size(_partition(max_bytes=20 * 1024 * MiB), 0, 0)


def test_a_pull_never_asks_for_more_than_the_messages_left() -> None:
    """Near the message budget a pull asks for just the messages left."""
    expected = 3
    assert expected == pull_size(_partition(max_messages=100), 97, 0)


@given(
    max_messages=st.integers(1, 20_000),
    max_bytes=st.integers(1, 2048 * MiB),
    sizes=st.lists(st.integers(1, MAX_MESSAGE_BYTES), max_size=300),
)
def test_a_partition_never_holds_more_than_its_ceiling_and_one_message(
    max_messages: int, max_bytes: int, sizes: list[int]
) -> None:
    """A backlog whose messages grow no larger holds at most the ceiling plus one message."""
    partition = _partition(max_messages, max_bytes)
    backlog = sorted(sizes, reverse=True)
    held = _drain(partition, backlog, rest=backlog[-1] if backlog else MAX_MESSAGE_BYTES)
    assert held <= max(max_bytes, PULL_CEILING_BYTES) + MAX_MESSAGE_BYTES


def test_large_messages_behind_small_ones_overshoot_by_one_pull_at_most() -> None:
    """The bound's stated limit: after 2 KB messages one pull may bring 1,000 of 10 MB."""
    held = _drain(_partition(), [2048] * 51)
    assert held <= PULL_CEILING_BYTES + MAX_PULL * MAX_MESSAGE_BYTES
