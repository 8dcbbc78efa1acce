"""A micro-batch is spread over its partitions: no task takes a small backlog all alone.

Before the share rule, the first of two tasks to pull took a backlog smaller than one
pull whole (e.g. 1 and 299 of 300: the other had only the driver's probe message).
Both sources (``pubsub`` and the loader's processing source) plan the same descriptors.
"""

from __future__ import annotations

import sys
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest
from plowline_loader.source.processing import register_processing_source, report_of
from pyspark import TaskContext, cloudpickle
from pyspark.sql import DataFrame, Row

if TYPE_CHECKING:
    from conftest import Channel, Harness
    from plowline_loader.source.delivery import PulledMessage

cloudpickle.register_pickle_by_value(sys.modules[__name__])  # executors cannot import it

BACKLOG = 300  # smaller than one pull (1,000): the unkind case


@dataclass(frozen=True)
class CountAndAck:
    """A partition function: ack every delivery, return (partition index, deliveries)."""

    endpoint: str
    subscription: str

    def __call__(self, messages: Iterable[PulledMessage] | Iterable[Row]) -> list[tuple[int, int]]:
        """Ack the partition's deliveries (they are durable: counted) and report their number."""
        from plowline_loader.source.subscription import Subscription

        ack_ids = [message["ack_id"] if isinstance(message, Row) else message.ack_id
                   for message in messages]  # fmt: skip
        if ack_ids:
            Subscription(self.subscription, self.endpoint).ack(ack_ids)
        return [(TaskContext.get().partitionId(), len(ack_ids))]  # type: ignore[union-attr]


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


@pytest.mark.parametrize("source", ["pubsub", "processing"])
def test_a_backlog_smaller_than_one_pull_is_shared_by_both_partitions(
    harness: Harness, channel: Channel, source: str
) -> None:
    """300 messages, 2 partitions, a budget of 10,000 each: neither takes over 60%, all acked."""
    channel.publish(BACKLOG)
    count = CountAndAck(channel.endpoint, channel.subscription)
    split: Counter[int] = Counter()
    if source == "processing":
        name = f"spread-{uuid.uuid4().hex[:8]}"
        register_processing_source(harness.spark, name, count)
        write = _processing_writer(split)
    else:
        name, write = "pubsub", _pubsub_writer(count, split)
    query = (
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

    harness.drain(query)

    expected = (BACKLOG, True, 0)
    actual = (sum(split.values()), max(split.values()) <= 0.6 * BACKLOG, channel.outstanding())
    assert expected == actual, dict(split)
