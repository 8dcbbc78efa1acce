"""A micro-batch is spread over its partitions: no task takes a small backlog all alone.

Before the share rule, the first of two tasks to pull took a backlog smaller than one
pull whole (e.g. 1 and 299 of 300: the other had only the driver's probe message), and
a larger one too (1 and 2,019 of 2,020: the demo's backlog). Both sources (``pubsub`` and
the loader's processing source) plan the same descriptors.
"""

from __future__ import annotations

import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING

import pytest
from plowline_loader.source.processing import register_processing_source, report_of
from pyspark import TaskContext, cloudpickle
from pyspark.sql import DataFrame, Row
from pyspark.sql.streaming import StreamingQuery

if TYPE_CHECKING:
    from conftest import Channel, Harness
    from plowline_cloud.pubsub.pulled import PulledMessage

cloudpickle.register_pickle_by_value(sys.modules[__name__])  # executors cannot import it


@dataclass(frozen=True)
class CountAndAck:
    """A partition function: ack every delivery, return (partition index, deliveries)."""

    endpoint: str
    subscription: str
    late_s: float = 0.0  # partition 1 starts reading this late, as on a cold executor

    def __call__(self, messages: Iterable[PulledMessage] | Iterable[Row]) -> list[tuple[int, int]]:
        """Ack the partition's deliveries (they are durable: counted) and report their number."""
        from plowline_cloud.pubsub.subscription import Subscription

        if TaskContext.get().partitionId() == 1:  # type: ignore[union-attr]
            time.sleep(self.late_s)  # real time on purpose: the other task pulls meanwhile

        ack_ids = [message["ack_id"] if isinstance(message, Row) else message.ack_id
                   for message in messages]  # fmt: skip
        if ack_ids:
            Subscription(self.subscription, self.endpoint).ack(ack_ids)
        return [(TaskContext.get().partitionId(), len(ack_ids))]  # type: ignore[union-attr]


@dataclass(frozen=True)
class EachRound:
    """The processing source's form of ``CountAndAck``: its rounds read as one stream."""

    count: CountAndAck

    def __call__(self, rounds: Iterable[Iterable[PulledMessage]]) -> list[tuple[int, int]]:
        """Count and ack the deliveries of every round."""
        return self.count(chain.from_iterable(rounds))


def _pubsub_writer(count: CountAndAck, split: Counter[int]) -> Callable[[DataFrame, int], None]:
    def write(frame: DataFrame, batch_id: int) -> None:
        def run(rows: Iterator[Row]) -> list[tuple[int, int]]:
            return count(rows)

        split.update(dict(frame.rdd.mapPartitions(run).collect()))

    return write


def _processing_writer(split: Counter[int]) -> Callable[[DataFrame, int], None]:
    def write(frame: DataFrame, batch_id: int) -> None:
        split.update(dict(report_of(row) for row in frame.collect()))

    return write


def _start(
    harness: Harness, channel: Channel, name: str, write: Callable[[DataFrame, int], None]
) -> StreamingQuery:
    """Start a query of source ``name`` over ``channel``: 2 partitions of 10,000 messages."""
    return (
        harness.spark.readStream.format(name)
        .option("subscription", channel.subscription)
        .option("emulatorHost", channel.endpoint)
        .option("pullTimeoutSeconds", "0.5")
        .option("maxMessagesPerPartition", "10000")
        .load()
        .writeStream.foreachBatch(write)
        .option("checkpointLocation", str(harness.root / "cp"))
        .start()
    )


@pytest.mark.parametrize("source", ["pubsub", "processing"])
@pytest.mark.parametrize(
    "backlog",
    [
        pytest.param(300, id="smaller-than-one-pull"),
        pytest.param(2020, id="two-pulls-and-more-the-demos"),
    ],
)
def test_a_backlog_is_shared_by_both_partitions(
    harness: Harness, channel: Channel, source: str, backlog: int
) -> None:
    """A backlog, 2 partitions, a budget of 10,000 each: neither takes over 60%, all acked."""
    channel.publish(backlog)
    count = CountAndAck(channel.endpoint, channel.subscription)
    split: Counter[int] = Counter()
    if source == "processing":
        name = f"spread-{uuid.uuid4().hex[:8]}"
        register_processing_source(harness.spark, name, EachRound(count))
        write = _processing_writer(split)
    else:
        name, write = "pubsub", _pubsub_writer(count, split)
    query = _start(harness, channel, name, write)

    harness.drain(query)

    expected = (backlog, True, 0)
    actual = (sum(split.values()), max(split.values()) <= 0.6 * backlog, channel.outstanding())
    assert expected == actual, dict(split)


def test_a_task_starting_late_still_gets_its_share_of_the_first_batch(
    harness: Harness, channel: Channel
) -> None:
    """2,020 messages; partition 1 reads 2 s late each batch: the first batch is the probe, dealt.

    Before, the task on time pulled the backlog beyond its share of the probe (1,520 of
    2,020) while the late one started, as on a cluster's cold executor.
    """
    backlog = 2020
    channel.publish(backlog)
    count = CountAndAck(channel.endpoint, channel.subscription, late_s=2.0)
    split: Counter[int] = Counter()
    name = f"late-{uuid.uuid4().hex[:8]}"
    register_processing_source(harness.spark, name, EachRound(count))
    query = _start(harness, channel, name, _processing_writer(split))

    harness.drain(query)

    expected = (backlog, True, 0)
    actual = (sum(split.values()), max(split.values()) <= 0.6 * backlog, channel.outstanding())
    assert expected == actual, dict(split)
