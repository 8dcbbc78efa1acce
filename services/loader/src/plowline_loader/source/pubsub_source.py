"""Pub/Sub as a Spark Structured Streaming source (Python Data Source API, pyspark 4.3).

Usage::

    register_pubsub_source(spark)
    stream = (spark.readStream.format("pubsub")
              .option("subscription", "projects/p/subscriptions/s")
              .option("emulatorHost", "127.0.0.1:8085")      # omit for Google
              .load())
    stream.writeStream.foreachBatch(write_batch).start()  # e.g. AckingPartition per partition

Semantics (Pub/Sub has no offsets and cannot replay, so this source does not pretend to):

- **Offsets are a batch counter** ``{"batch": n}``. They name a micro-batch, not data.
  ``latestOffset`` returns ``start + 1`` only when a probe pull on the driver-side reader
  process got a message; otherwise it returns ``start``, so Spark plans no empty batches
  and ``processAllAvailable()`` returns once the subscription is drained. A probe that
  found a message pulls once more, quickly, for up to one pull's worth (``probe_size``):
  how much is there. The probed messages are not nacked (that would inflate their
  delivery attempts): they are dealt round-robin into the partitions' descriptors and
  count against their budgets.
- **A batch is shared (``pulls.shares``).** The probe is dealt evenly over the partitions,
  and each then pulls on up to its budget, whatever the probe's size (a short answer from
  Pub/Sub says nothing about the backlog). The query's first probe is its micro-batch
  (its tasks start cold, seconds apart): each partition processes its share and pulls
  nothing more, so no task takes a small backlog all alone (the first task to start used
  to). One partition always pulls on.
- **Long-lived tasks (``taskSeconds`` > 0).** A partition that pulls on reads slice after
  slice for that long (``pulls.TaskRounds``): under a steady stream the driver plans a
  micro-batch once per ``taskSeconds``, not once a second. The process function reads each slice to its end
  before the next is pulled. 0 (the default of this source): one slice a task.
- **Executors pull.** ``partitions(start, end)`` returns ``numPartitions`` picklable
  descriptors (subscription, endpoint, share, budgets, timeouts). ``read()`` pulls on the
  executor until the partition holds its budget (``maxMessagesPerPartition``, or its share
  after a short probe) or ``maxBytesPerPartition`` bytes, or a pull comes back empty;
  each pull's ack ids get a receipt extension to ``ackDeadlineSeconds`` before the rows
  are yielded. The probe's messages are bounded like a pull (``probe_size``). Memory per task
  is bounded for a backlog of large messages: the byte budget is checked between pulls,
  and a pull asks for no more messages than the bytes left under
  ``max(maxBytesPerPartition, PULL_CEILING_BYTES)`` (``pulls``; 512 MiB by default) can hold at the
  largest message the task has pulled so far, Pub/Sub's limit (``MAX_MESSAGE_BYTES``,
  10 MB) before the first pull (``pull_size``). A backlog of 10 MB messages used to put
  1,000 of them, 10 GB, in one pull; now the first pull takes 51 and the rest stay under
  the ceiling. Unary Pull has no byte limit of its own, so the count is the only lever;
  events of a few KB are pulled 1,000 at a time after the first pull.
- **Nothing is acked here.** Rows carry ``ack_id`` and ``subscription``; the sink acks them
  in the task that processed them, after their outcome is durable, and extends their
  leases meanwhile (``plowline_loader.source.acking``). ``commit()`` does nothing.
- **At least once.** A task or process that dies before acking leaves its ack ids to
  expire (or nacks them when it fails cleanly): Pub/Sub redelivers them to a later pull.
  A duplicate is possible (ack lost after a durable write); a loss is not.
- **Pub/Sub refusing.** Every call retries transient errors (UNAVAILABLE, …) with backoff
  for a bounded time (``plowline_cloud.pubsub.subscription.RETRY_FOR_S``). Past that, a refused pull ends a
  partition's slice early and a refused probe plans no batch now (see ``pull_bounded``
  and ``latestOffset``): neither fails the task nor ends the query, and nothing is acked
  that is not durable. Non-transient errors still fail the task or end the query.
- **Restarts.** A committed batch is never re-run. An uncommitted batch in the offset log
  is re-planned on restart with the same ``{"batch": n}`` range and ``read()`` runs again:
  it pulls whatever Pub/Sub offers now (fresh and redelivered messages alike), which is
  correct because no message was acked by the failed run. A retry, Spark's of a task or
  the driver's of the action, pulls afresh without its partition's share of the probe
  (``pulls.retried_action``): the first run acked it, nacked it, or died (its leases
  lapse and Pub/Sub delivers it again).

Pitfalls for callers: run exactly one action on the micro-batch DataFrame (every action
re-runs ``read()`` over the same partitions, pulling other messages), and never filter rows out before the acking sink (a dropped row is never
acked and comes back forever); filter inside the processor instead.
``Trigger.AvailableNow`` is not supported (a subscription has no "now" to stop at).

Memory (a loader pod's PSS budget): pyarrow and the Pub/Sub client are imported where they are used, so
Spark's planner workers, which only unpickle the data source, do not load them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import structlog
from plowline_core.errors import ConfigError, TransientError
from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.streaming.datasource import ReadLimit
from pyspark.sql.types import (
    BinaryType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from plowline_loader.source.lease import MAX_DEADLINE_S, MIN_DEADLINE_S
from plowline_loader.source.pulls import (
    DRAIN_TIMEOUT_S,
    PubSubPartition,
    probe_size,
    pull_bounded,
    shares,
)

if TYPE_CHECKING:
    import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type hints
    from plowline_cloud.pubsub.pulled import PulledMessage
    from plowline_cloud.pubsub.subscription import Subscription

_log = structlog.get_logger("plowline.loader.source")

FORMAT = "pubsub"
SCHEMA = StructType(
    [
        StructField("ack_id", StringType(), False),
        StructField("subscription", StringType(), False),
        StructField("message_id", StringType(), False),
        StructField("publish_time", TimestampType(), False),
        StructField("data", BinaryType(), False),
        StructField("attributes", MapType(StringType(), StringType(), False), False),
    ]
)
PROBE_LEASE_S = 120
"""Lease on the driver's probe delivery until a task takes it over (see ``latestOffset``)."""
_N = TypeVar("_N", int, float)


@dataclass(frozen=True)
class PubSubSourceOptions:
    """The options of ``spark.readStream.format("pubsub")``, validated."""

    subscription: str
    emulator_host: str | None = None
    num_partitions: int = 2
    max_messages_per_partition: int = 1000
    max_bytes_per_partition: int = 16 * 1024 * 1024
    pull_timeout_s: float = 1.0
    ack_deadline_s: int = 60
    task_seconds: float = 0.0  # > 0: long-lived tasks (``pulls.TaskRounds``)

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> PubSubSourceOptions:
        """Return the options from Spark's (case-insensitive) option map, or raise ConfigError."""
        subscription = options.get("subscription", "")
        if not subscription.startswith("projects/") or "/subscriptions/" not in subscription:
            raise ConfigError(
                f"pubsub source: option 'subscription' must be projects/P/subscriptions/S, "
                f"got {subscription!r}"
            )
        parsed = cls(
            subscription=subscription,
            emulator_host=options.get("emulatorHost") or None,
            num_partitions=_number(options, "numPartitions", int, cls.num_partitions),
            max_messages_per_partition=_number(
                options, "maxMessagesPerPartition", int, cls.max_messages_per_partition
            ),
            max_bytes_per_partition=_number(
                options, "maxBytesPerPartition", int, cls.max_bytes_per_partition
            ),
            pull_timeout_s=_number(options, "pullTimeoutSeconds", float, cls.pull_timeout_s),
            ack_deadline_s=_number(options, "ackDeadlineSeconds", int, cls.ack_deadline_s),
            task_seconds=_number(options, "taskSeconds", float, cls.task_seconds),
        )
        parsed._check()
        return parsed

    def _check(self) -> None:
        if min(self.num_partitions, self.max_messages_per_partition) < 1:
            raise ConfigError(
                "pubsub source: numPartitions and maxMessagesPerPartition must be >= 1"
            )
        if self.max_bytes_per_partition < 1 or self.pull_timeout_s <= 0:
            raise ConfigError(
                "pubsub source: maxBytesPerPartition and pullTimeoutSeconds must be > 0"
            )
        if self.task_seconds < 0:
            raise ConfigError("pubsub source: taskSeconds must be >= 0 (0: one slice a task)")
        if not MIN_DEADLINE_S <= self.ack_deadline_s <= MAX_DEADLINE_S:
            raise ConfigError(
                f"pubsub source: ackDeadlineSeconds must be within "
                f"{MIN_DEADLINE_S}..{MAX_DEADLINE_S} (Pub/Sub's range)"
            )


def _number(options: Mapping[str, str], key: str, kind: type[_N], default: _N) -> _N:
    raw = options.get(key)
    if raw is None:
        return default
    try:
        return kind(raw)
    except ValueError:
        raise ConfigError(f"pubsub source: option {key!r} must be a number, got {raw!r}") from None


def to_record_batch(
    messages: list[PulledMessage], subscription: str, schema: pa.Schema
) -> pa.RecordBatch:
    """Return the rows of ``messages`` as one Arrow batch of the source's schema."""
    import pyarrow as pa

    columns = [
        pa.array([m.ack_id for m in messages], pa.string()),
        pa.array([subscription] * len(messages), pa.string()),
        pa.array([m.message_id for m in messages], pa.string()),
        pa.array([m.publish_time_us for m in messages], schema.field("publish_time").type),
        pa.array([m.data for m in messages], pa.binary()),
        pa.array([list(m.attributes) for m in messages], schema.field("attributes").type),
    ]
    return pa.RecordBatch.from_arrays(columns, schema=schema)


@dataclass
class _Probe:
    end: int
    messages: list[PulledMessage]


class PubSubStreamReader(DataSourceStreamReader):
    """Plan batch-counter micro-batches on the driver; pull on executors in ``read``."""

    def __init__(self, options: PubSubSourceOptions) -> None:
        self.options = options
        self._probe: _Probe | None = None
        self._subscription: Subscription | None = None
        self._planned = False  # planned a batch already: the executors' workers are warm

    def __getstate__(self) -> dict[str, Any]:
        # Spark pickles the reader into the executors' read function: ship only options.
        return {"options": self.options, "_probe": None, "_subscription": None, "_planned": False}

    def initialOffset(self) -> dict[str, int]:  # noqa: N802 - Spark's hook name
        """Start every new query at batch 0."""
        return {"batch": 0}

    def latestOffset(self, start: dict[str, int], limit: ReadLimit) -> dict[str, int]:  # noqa: N802 - Spark's hook name
        """Return ``start + 1`` when a probe pull found a message, else ``start``.

        Notes:
            An exception here ends the query, so a probe still refused after its retries
            (``TransientError``) plans no batch now, as an empty probe does. A refused
            pull leased nothing; a probe whose long lease is refused is not used (its
            lease lapses: delivered again later, to one task). Other errors end the query.
        """
        following = start["batch"] + 1
        if self._probe is not None:
            if self._probe.end == following:
                return {"batch": following}
            self._release_probe()
        subscription = self._driver_subscription()
        try:
            probed = subscription.pull(1, self.options.pull_timeout_s)
            if not probed:
                return start
            self._probe_rest(subscription, probed)
            # Planning and starting the batch's tasks can outlast a short ack deadline (on
            # a cluster, executors' cold Python workers took > 10 s): the probe would then
            # be redelivered to another partition of the same batch, a duplicate. So it is
            # leased for longer; ``pull_bounded`` sets it back to the ack deadline in a task.
            lease = max(self.options.ack_deadline_s, PROBE_LEASE_S)
            subscription.modack([m.ack_id for m in probed], lease)
        except TransientError as error:
            _log.warning(
                "probe pull keeps failing: no micro-batch planned now, probing again "
                "at the next trigger",
                subscription=self.options.subscription,
                error=str(error),
            )
            return start
        self._probe = _Probe(following, probed)
        return {"batch": following}

    def _probe_rest(self, subscription: Subscription, probed: list[PulledMessage]) -> None:
        """Pull the rest of the probe into ``probed`` (one pull).

        Notes:
            One quick pull (``DRAIN_TIMEOUT_S``) of up to ``probe_size`` messages, dealt
            over the partitions (``shares``). A refusal past its retries keeps the probe
            at its one message.
        """
        opts = self.options
        asked = probe_size(
            opts.num_partitions,
            opts.max_messages_per_partition,
            opts.max_bytes_per_partition,
            probed[0].size,
        )
        if asked > 1:
            try:
                probed.extend(subscription.pull(asked - 1, DRAIN_TIMEOUT_S))
            except TransientError as error:
                _log.warning(
                    "probe's second pull refused: planned on one message", error=str(error)
                )

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[PubSubPartition]:
        """Return ``numPartitions`` descriptors for a non-empty range, none for an empty one.

        Notes:
            Each carries its share of the probe and its budget (``shares``; the first
            batch this process plans is its probe alone). A range planned without this
            process's probe (re-planned after a restart) gets no shares and full budgets:
            the tasks pull as they start, as before the share rule.
        """
        if start["batch"] >= end["batch"]:
            return []
        opts = self.options
        probed: list[PulledMessage] = []
        if self._probe is not None and self._probe.end == end["batch"]:
            probed = self._probe.messages
            self._probe = None
        first, self._planned = not self._planned and bool(probed), True
        dealt = shares(probed, opts.num_partitions, opts.max_messages_per_partition, first)
        return [
            PubSubPartition(
                index=index,
                subscription=opts.subscription,
                emulator_host=opts.emulator_host,
                max_messages=budget,
                max_bytes=opts.max_bytes_per_partition,
                pull_timeout_s=opts.pull_timeout_s,
                ack_deadline_s=opts.ack_deadline_s,
                prefetched=share,
                task_seconds=opts.task_seconds if budget > len(share) else 0.0,
            )
            for index, (share, budget) in enumerate(dealt)
        ]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Pull the partition's bounded slice on the executor and yield it as Arrow batches."""
        if not isinstance(partition, PubSubPartition):
            raise TypeError(f"pubsub source cannot read {type(partition).__name__}")
        schema = to_arrow_schema(SCHEMA, timezone="UTC")
        for pulled in pull_bounded(partition):
            yield to_record_batch(pulled, partition.subscription, schema)

    def commit(self, end: dict[str, int]) -> None:
        """Do nothing: acks happen in the tasks, after the sink made the rows durable."""

    def stop(self) -> None:
        """Give an unplanned probe delivery back to Pub/Sub at once."""
        self._release_probe()

    def _release_probe(self) -> None:
        if self._probe is None:
            return
        probe, self._probe = self._probe, None
        try:
            self._driver_subscription().nack([m.ack_id for m in probe.messages])
        except TransientError as error:  # its lease lapses instead: delivered again later
            _log.warning("probe not handed back", error=str(error))

    def _driver_subscription(self) -> Subscription:
        from plowline_cloud.pubsub.subscription import Subscription

        if self._subscription is None:
            self._subscription = Subscription(self.options.subscription, self.options.emulator_host)
        return self._subscription


class PubSubDataSource(DataSource):
    """The ``pubsub`` format: a streaming-only source over one subscription.

    Notes:
        A variant (``source.processing``) changes the class attributes and ``stream_reader_for``.
    """

    format_name: ClassVar[str] = FORMAT
    row_schema: ClassVar[StructType] = SCHEMA

    @classmethod
    def name(cls) -> str:
        """Return the format name used in ``readStream.format``."""
        return cls.format_name

    def schema(self) -> StructType:
        """Return the fixed row schema (ack id, subscription, message fields)."""
        return self.row_schema

    def streamReader(self, schema: StructType) -> PubSubStreamReader:  # noqa: N802 - Spark's hook name
        """Return the stream reader configured by this source's options."""
        return self.stream_reader_for(PubSubSourceOptions.parse(self.options))

    def stream_reader_for(self, options: PubSubSourceOptions) -> PubSubStreamReader:
        """Return the stream reader for validated options."""
        return PubSubStreamReader(options)


def register_pubsub_source(spark: SparkSession) -> None:
    """Make ``spark.readStream.format("pubsub")`` available in ``spark``."""
    spark.dataSource.register(PubSubDataSource)
