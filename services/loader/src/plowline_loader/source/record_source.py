"""The ``pubsub`` source for exactly-once mode: compressed batches opened into records as read.

Usage (``streaming.StreamingLoader``, exactly-once mode)::

    register_record_source(spark)
    spark.readStream.format("pubsub-records")
        .option("subscription", ...)                 # every ``pubsub`` option, and
        .option("maxBytesSinglePayload", "10000000") # 2.x's decompression block
        .option("maxBytesInBatch", "5242880")
        .load()

Plans, pulls, leases and acks nothing, exactly as ``pubsub`` does (its notes hold here);
``read()`` differs only in what one row is: a compressed batch that opens cleanly
becomes one row per record, with two more columns, ``record`` (the record's index) and
``records`` (the batch's record count), both null for a delivery read as itself
(``record_split``: which batches open, and the memory bound). The byte budget
``maxBytesPerPartition`` counts a batch's opened records.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from plowline_core.errors import ConfigError
from pyspark.sql import SparkSession
from pyspark.sql.datasource import InputPartition
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import IntegerType, StructField, StructType

from plowline_loader.source.pubsub_source import (
    SCHEMA,
    PubSubDataSource,
    PubSubSourceOptions,
    PubSubStreamReader,
    to_record_batch,
)
from plowline_loader.source.pulls import PubSubPartition, pull_bounded

if TYPE_CHECKING:
    import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type hints

    from plowline_loader.compressed_input import Decompression
    from plowline_loader.record_split import SplitRow

RECORDS_FORMAT = "pubsub-records"
RECORD_SCHEMA = StructType(
    [
        *SCHEMA.fields,
        StructField("record", IntegerType(), True),
        StructField("records", IntegerType(), True),
    ]
)


@dataclass(frozen=True)
class RecordSourceOptions(PubSubSourceOptions):
    """``pubsub``'s options and 2.x's ``decompression`` block, validated (None: 2.x's default)."""

    max_bytes_single_payload: int | None = None
    max_bytes_in_batch: int | None = None

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> RecordSourceOptions:
        """Return the options from Spark's option map, or raise ConfigError."""
        base = PubSubSourceOptions.parse(options)
        single = _positive(options, "maxBytesSinglePayload")
        in_batch = _positive(options, "maxBytesInBatch")
        fields = {field.name: getattr(base, field.name) for field in dataclasses.fields(base)}
        return cls(**fields, max_bytes_single_payload=single, max_bytes_in_batch=in_batch)

    @property
    def decompression(self) -> Decompression:
        """The decompression block these options name.

        Notes:
            Imported here, in the tasks: the planner processes, which only unpickle the
            source, never load the transform's modules (``pubsub_source``'s memory note).
        """
        from plowline_loader.compressed_input import DEFAULT_DECOMPRESSION, Decompression

        return Decompression(
            self.max_bytes_single_payload or DEFAULT_DECOMPRESSION.max_bytes_single_payload,
            self.max_bytes_in_batch or DEFAULT_DECOMPRESSION.max_bytes_in_batch,
        )


def _positive(options: Mapping[str, str], key: str) -> int | None:
    raw = options.get(key)
    if raw is None:
        return None
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise ConfigError(
            f"pubsub-records source: option {key!r} must be a number >= 1, got {raw!r}"
        )
    return value


def to_split_batch(
    rows: Sequence[SplitRow], subscription: str, plain_schema: pa.Schema, schema: pa.Schema
) -> pa.RecordBatch:
    """Return ``rows`` as one Arrow batch of ``schema``, ``RECORD_SCHEMA`` in Arrow
    (``plain_schema``: ``pubsub``'s ``SCHEMA`` in Arrow)."""
    import pyarrow as pa

    plain = to_record_batch([row.message for row in rows], subscription, plain_schema)
    columns = [
        *plain.columns,
        pa.array([row.record for row in rows], pa.int32()),
        pa.array([row.records for row in rows], pa.int32()),
    ]
    return pa.RecordBatch.from_arrays(columns, schema=schema)


class RecordStreamReader(PubSubStreamReader):
    """Plan like ``pubsub``; in ``read`` pull and yield a clean batch's records one a row."""

    options: RecordSourceOptions

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Pull the partition's slice, weighed by opened bytes, and yield it as Arrow batches."""
        if not isinstance(partition, PubSubPartition):
            raise TypeError(f"{RECORDS_FORMAT} source cannot read {type(partition).__name__}")
        from plowline_loader.record_split import Surveyor, split_rows

        plain_schema = to_arrow_schema(SCHEMA, timezone="UTC")
        schema = to_arrow_schema(RECORD_SCHEMA, timezone="UTC")
        surveyor = Surveyor(self.options.decompression)
        for pulled in pull_bounded(partition, surveyor):
            for rows in split_rows(pulled, surveyor):
                yield to_split_batch(rows, partition.subscription, plain_schema, schema)


class RecordDataSource(PubSubDataSource):
    """The ``pubsub-records`` format: ``pubsub``, with compressed batches opened into records."""

    format_name: ClassVar[str] = RECORDS_FORMAT
    row_schema: ClassVar[StructType] = RECORD_SCHEMA

    def streamReader(self, schema: StructType) -> PubSubStreamReader:  # noqa: N802 - Spark's hook name
        """Return the stream reader configured by this source's options."""
        return RecordStreamReader(RecordSourceOptions.parse(self.options))


def register_record_source(spark: SparkSession) -> None:
    """Make ``spark.readStream.format("pubsub-records")`` available in ``spark``."""
    spark.dataSource.register(RecordDataSource)
