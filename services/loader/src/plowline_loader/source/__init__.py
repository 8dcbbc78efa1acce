"""Pub/Sub as a Spark Structured Streaming source, and the ack-after-durable sink helper."""

from plowline_loader.source.acking import (
    AckingPartition,
    PartitionProcessor,
    Settlement,
    acking_batch_writer,
)
from plowline_loader.source.pubsub_source import (
    FORMAT,
    SCHEMA,
    PubSubDataSource,
    PubSubPartition,
    PubSubSourceOptions,
    PubSubStreamReader,
    register_pubsub_source,
)

__all__ = [
    "FORMAT",
    "SCHEMA",
    "AckingPartition",
    "PartitionProcessor",
    "PubSubDataSource",
    "PubSubPartition",
    "PubSubSourceOptions",
    "PubSubStreamReader",
    "Settlement",
    "acking_batch_writer",
    "register_pubsub_source",
]
