"""The pubsub Spark source end to end: pull on executors, ack after durable, redeliver on failure."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

import pytest
from plowline_loader.source.acking import AckingPartition, PartitionProcessor
from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, Row

if TYPE_CHECKING:
    from conftest import Channel, Harness


def acking_batch_writer(
    process: PartitionProcessor[Row],
    *,
    emulator_host: str | None = None,
    ack_deadline_s: int = 60,
    lease_interval_s: float = 20.0,
) -> Callable[[DataFrame, int], None]:
    """Return a ``foreachBatch`` function that runs ``AckingPartition`` on every partition.

    The loader itself runs ``AckingPartition`` inside its tasks (``partition``); this
    drives the source and the acking alone. One action on the micro-batch: a second
    would run the source's ``read()`` again and pull other messages.
    """
    acking = AckingPartition[Row](process, emulator_host, ack_deadline_s, lease_interval_s)

    def settle(rows: Iterable[Row]) -> None:
        acking(rows)  # foreachPartition wants a function returning nothing

    def write_batch(frame: DataFrame, batch_id: int) -> None:
        frame.foreachPartition(settle)

    return write_batch


def test_every_published_message_is_processed_and_acked(harness: Harness, channel: Channel) -> None:
    """Every one of 2,000 messages reaches the sink and none stays unacked afterwards."""
    published = channel.publish(2000)
    write = acking_batch_writer(harness.recorder(), emulator_host=channel.endpoint)

    harness.drain(harness.start(channel, write, maxMessagesPerPartition="500"))

    assert (published, 0) == (set(harness.recorded()), channel.outstanding())


def test_failed_partition_is_redelivered_after_restart(harness: Harness, channel: Channel) -> None:
    """A sink that fails before acking loses nothing: the restarted query processes every message."""
    published = channel.publish(200)
    failing = acking_batch_writer(harness.exploding(), emulator_host=channel.endpoint)
    with pytest.raises(StreamingQueryException):
        harness.drain(harness.start(channel, failing))
    write = acking_batch_writer(harness.recorder(), emulator_host=channel.endpoint)

    harness.drain(harness.start(channel, write))

    assert (published, 0) == (set(harness.recorded()), channel.outstanding())


def test_restart_after_commit_replays_nothing(harness: Harness, channel: Channel) -> None:
    """Restarting a drained query from its checkpoint re-runs no committed batch."""
    published = channel.publish(50)
    first = acking_batch_writer(harness.recorder("first"), emulator_host=channel.endpoint)
    harness.drain(harness.start(channel, first))
    planned = harness.planned_batches()
    again = acking_batch_writer(harness.recorder("again"), emulator_host=channel.endpoint)

    harness.drain(harness.start(channel, again))

    nothing: list[str] = []
    assert (published, nothing, planned) == (
        set(harness.recorded("first")),
        harness.recorded("again"),
        harness.planned_batches(),
    )


def test_leases_outlive_the_ack_deadline_while_a_batch_is_in_flight(
    harness: Harness, channel: Channel
) -> None:
    """A sink slower than the 10 s ack deadline still sees each message once: leases are extended."""
    published = channel.publish(20)
    write = acking_batch_writer(
        harness.slow_recorder(seconds=13),
        emulator_host=channel.endpoint,
        ack_deadline_s=10,
        lease_interval_s=2,
    )

    query = harness.start(channel, write, ackDeadlineSeconds="10")
    with harness.thief(channel) as thief:
        harness.drain(query)

    no_lapses: list[str] = []
    assert (sorted(published), no_lapses, 0) == (
        sorted(harness.recorded()),
        thief.stolen,
        channel.outstanding(),
    )


def test_batches_are_bounded_by_partition_budgets(harness: Harness, channel: Channel) -> None:
    """With 2 partitions of at most 100 messages, no micro-batch holds more than 200 rows."""
    published = channel.publish(500)
    write = harness.per_batch_writer(channel)

    harness.drain(harness.start(channel, write, numPartitions="2", maxMessagesPerPartition="100"))

    oversized = [size for size in harness.batch_sizes() if size > 200]
    assert (published, []) == (set(harness.recorded()), oversized)


def test_an_idle_subscription_plans_no_batch(harness: Harness, channel: Channel) -> None:
    """With nothing to pull, Spark plans no micro-batch beyond its initial empty batch 0."""
    query = harness.start(channel, harness.per_batch_writer(channel))

    harness.drain(query)

    no_rows: list[str] = []
    assert (["0"], no_rows) == (harness.planned_batches(), harness.recorded())
