"""The processing source hands its partition function the pulled messages themselves."""

from __future__ import annotations

import pickle
import time
from typing import TYPE_CHECKING

from plowline_loader.source.processing import ProcessingStreamReader
from plowline_loader.source.pubsub_source import PubSubSourceOptions
from pyspark import cloudpickle

if TYPE_CHECKING:
    from conftest import Channel


def test_the_partition_function_reads_each_delivery_as_pulled(channel: Channel) -> None:
    """Each of 3 deliveries reaches the function once, as a PulledMessage carrying its
    subscription, ids, data, attributes and publish time (µs, an int: no datetime made)."""
    before_us = int(time.time() * 1e6) - 1_000_000  # the emulator's clock may round down
    ids = channel.publish(3)
    after_us = int(time.time() * 1e6) + 1_000_000
    everything = cloudpickle.dumps(lambda rounds: [[m for one in rounds for m in one]])  # type: ignore[no-untyped-call]
    options = PubSubSourceOptions(channel.subscription, channel.endpoint, 1, 10, pull_timeout_s=5.0)
    reader = ProcessingStreamReader(options, everything)
    [partition] = reader.partitions({"batch": 0}, {"batch": 1})

    [(blob,)] = list(reader.read(partition))
    messages = pickle.loads(blob)

    expected = (
        ids,
        [("PulledMessage", channel.subscription, f"m-{n}".encode(), (("n", str(n)),), True)
         for n in range(3)],
    )  # fmt: skip
    assert expected == (
        {m.message_id for m in messages},
        sorted(
            (
                type(m).__name__,
                m.subscription,
                m.data,
                m.attributes,
                isinstance(m.publish_time_us, int) and before_us <= m.publish_time_us <= after_us,
            )
            for m in messages
        ),
    )
