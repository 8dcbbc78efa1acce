"""Specification of a partition's pull sizes: a backlog of large messages stays bounded."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from plowline_loader.source.pubsub_source import (
    MAX_MESSAGE_BYTES,
    PULL_CEILING_BYTES,
    PubSubPartition,
    pull_size,
)
from plowline_loader.source.subscription import MAX_PULL

MiB = 1024 * 1024


def _partition(max_messages: int = 10_000, max_bytes: int = 16 * MiB) -> PubSubPartition:
    return PubSubPartition(0, "projects/p/subscriptions/s", None, max_messages, max_bytes, 1.0, 60)


def _drain(partition: PubSubPartition, sizes: list[int]) -> int:
    """Run pull_bounded's loop against a backlog that answers each pull in full; return bytes."""
    count = size = 0
    backlog = iter(sizes)
    while count < partition.max_messages and size < partition.max_bytes:
        pulled = [
            next(backlog, MAX_MESSAGE_BYTES) for _ in range(pull_size(partition, count, size))
        ]
        count, size = count + len(pulled), size + sum(pulled)
    return size


def test_a_backlog_of_the_largest_messages_stays_under_the_ceiling() -> None:
    """1,000 messages of 10 MB each no longer come in one pull: the task holds ~512 MiB."""
    held = _drain(_partition(), [])
    assert held <= PULL_CEILING_BYTES + MAX_MESSAGE_BYTES


def test_small_messages_still_come_many_to_a_pull() -> None:
    """An empty partition asks for as many messages as the ceiling holds at 10 MB each."""
    expected = PULL_CEILING_BYTES // MAX_MESSAGE_BYTES
    assert expected == pull_size(_partition(), 0, 0)


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
    sizes=st.lists(st.integers(0, MAX_MESSAGE_BYTES), max_size=300),
)
def test_a_partition_never_holds_more_than_its_ceiling_and_one_message(
    max_messages: int, max_bytes: int, sizes: list[int]
) -> None:
    """Whatever the backlog's sizes, a partition holds at most its ceiling plus one message."""
    partition = _partition(max_messages, max_bytes)
    assert _drain(partition, sizes) <= max(max_bytes, PULL_CEILING_BYTES) + MAX_MESSAGE_BYTES
