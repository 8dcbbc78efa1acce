"""Long-lived tasks: a task pulls, writes and acks slice after slice, so Spark plans seldom.

Before (``task_seconds`` 0, one slice a task), a steady stream planned a micro-batch for
every slice: after a probe that found fewer messages than a pull, each partition took
its share of the probe and pulled nothing more, about one micro-batch a second, each
costing the JVM ~0.15 CPU-s of planning. ``source.pulls.TaskRounds`` reads rounds until
the task's time is up or the subscription is idle, and the loader settles each round
before it pulls the next.
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import TYPE_CHECKING, Any

import pytest
from plowline_cloud.pubsub.subscription import Subscription
from plowline_loader.source.pulls import PubSubPartition, TaskRounds
from plowline_loader.streaming import StreamingLoader, StreamSettings
from pyspark.sql import SparkSession
from support.configs import STREAMING_INSERTS

if TYPE_CHECKING:
    from collections.abc import Callable

    from conftest import Channel, ModeRig


def _partition(channel: Channel, max_messages: int, task_seconds: float) -> PubSubPartition:
    return PubSubPartition(
        index=0,
        subscription=channel.subscription,
        emulator_host=channel.endpoint,
        max_messages=max_messages,
        max_bytes=16 << 20,
        pull_timeout_s=0.5,
        ack_deadline_s=30,
        task_seconds=task_seconds,
    )


def _read_and_ack(channel: Channel, rounds: TaskRounds) -> list[list[str]]:
    """Read every round to its end and ack it before the next; return the message ids."""
    subscription = Subscription(channel.subscription, channel.endpoint)
    seen: list[list[str]] = []
    for messages in rounds:
        held = list(messages)
        if held:
            subscription.ack([message.ack_id for message in held])
        seen.append([message.message_id for message in held])
    return seen


def test_a_long_lived_task_reads_rounds_until_the_subscription_is_idle(channel: Channel) -> None:
    """250 messages, 60 a round, 30 s to live: every message once, no round over its budget,
    and the task ends on the first round that found nothing, long before its time."""
    ids = channel.publish(250)
    started = time.monotonic()

    seen = _read_and_ack(channel, TaskRounds(_partition(channel, 60, 30.0)))

    everything = [message_id for one in seen for message_id in one]
    expected = (ids, 250, True, True, [], True)
    assert expected == (
        set(everything),
        len(everything),
        len(seen) >= 5,
        max(map(len, seen)) <= 60,
        seen[-1],
        time.monotonic() - started < 15,
    ), [len(one) for one in seen]


def test_a_one_slice_task_reads_one_round(channel: Channel) -> None:
    """``task_seconds`` 0 (FILE_LOADS, exactly-once): one round of the budget, the rest left."""
    channel.publish(100)

    seen = _read_and_ack(channel, TaskRounds(_partition(channel, 40, 0.0)))

    expected = ([40], 60)
    assert expected == ([len(one) for one in seen], channel.outstanding())


def test_a_long_lived_task_ends_when_its_time_is_up_under_a_steady_stream(
    channel: Channel,
) -> None:
    """A stream that never pauses: the task ends within a round of its 3 s, not with the
    stream, and every round but the one its time ran out in found messages."""
    stop = threading.Event()

    def stream() -> None:
        while not stop.is_set():
            channel.publish(10, prefix=uuid.uuid4().hex[:6])
            time.sleep(0.1)

    channel.publish(10)  # the task starts with messages there, as a planned batch does
    publisher = threading.Thread(target=stream, daemon=True)
    publisher.start()
    try:
        started = time.monotonic()
        seen = _read_and_ack(channel, TaskRounds(_partition(channel, 50, 3.0)))
        lived = time.monotonic() - started
    finally:
        stop.set()
        publisher.join()

    expected = (True, True, True)
    assert expected == (3.0 <= lived < 8.0, len(seen) > 3, all(seen[:-1])), (lived, len(seen))


@pytest.mark.parametrize(
    "load",
    [
        pytest.param(dict(STREAMING_INSERTS), id="insert-all"),
        pytest.param({"mode": "STORAGE_WRITE_API", "stream": "default"}, id="write-api-default"),
    ],
)
def test_a_steady_stream_lands_round_by_round_in_a_few_micro_batches(
    spark: SparkSession, mode_rig: Callable[[dict[str, Any]], ModeRig], load: dict[str, Any]
) -> None:
    """A 6 s stream of 600 events through tasks of 8 s: rows land while their micro-batch is
    still running, every event exactly once, and Spark plans a handful of micro-batches
    (one a slice would be dozens)."""
    rig = mode_rig(load)
    settings = StreamSettings(
        checkpoint=str(rig.root / "checkpoint"),
        max_messages=100,
        pull_timeout_s=0.5,
        ack_deadline_s=30,
        lease_interval_s=5.0,
        backoff_max_s=2.0,
        task_seconds=8.0,
    )
    loader = StreamingLoader(spark, rig.config(), settings)
    ids = [str(uuid.uuid4()) for _ in range(600)]
    ahead: list[tuple[int, int]] = []  # (rows in the table, rows the driver was told of)
    done = threading.Event()

    def sample() -> None:
        # Watched all along, not at a few moments: on a busy machine the moments the table
        # runs ahead of the driver (a task's rounds written before its micro-batch ends)
        # need not fall on a fixed schedule.
        # The table first, then the driver: a batch ending between the two reads can only
        # make the table look behind, never ahead.
        while not done.wait(0.05):
            table = rig.counts()[0]
            ahead.append((table, loader.writer.totals.good))

    query = loader.start()
    watcher = threading.Thread(target=sample, daemon=True)
    watcher.start()
    try:
        for start in range(0, len(ids), 20):
            rig.publish(ids[start : start + 20])
            time.sleep(0.2)
        query.processAllAvailable()
        batches = int(query.lastProgress["batchId"]) + 1
    finally:
        done.set()
        watcher.join(30)
        loader.stop(30)

    expected = ((600, 600), 600, True, True)
    assert expected == (
        rig.counts(),
        loader.writer.totals.events_in,
        batches <= 6,
        any(table > told for table, told in ahead),
    ), (batches, sorted(set(ahead)))
