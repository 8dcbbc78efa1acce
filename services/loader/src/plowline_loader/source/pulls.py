"""A partition's bounded slice of a subscription: its descriptor, pull sizes and pulls.

What runs on the executor before the messages reach the partition function: the
``pubsub`` source (``pubsub_source``) plans these descriptors on the driver, and both it
and the processing source (``processing``) read them with ``pull_bounded``. The memory
bound a backlog of large messages needs is here (``pull_size``), and so is the share
rule that spreads a micro-batch over its partitions (``probe_size``, ``shares``).
A long-lived task (``task_seconds``) reads its partition as rounds (``TaskRounds``): one
bounded slice after another, each settled before the next is pulled, until its time is
up or the subscription is idle.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, replace
from itertools import chain
from typing import TYPE_CHECKING, TypeVar

import structlog
from plowline_core.errors import TransientError
from pyspark.sql.datasource import InputPartition

if TYPE_CHECKING:
    from plowline_cloud.pubsub.pulled import PulledMessage
    from plowline_cloud.pubsub.subscription import Subscription

_log = structlog.get_logger("plowline.loader.source")

# After a partition's first pull, one that waits this long for nothing: drained for now.
DRAIN_TIMEOUT_S = 0.25
MAX_MESSAGE_BYTES = 10 * 1024 * 1024
"""Pub/Sub's largest message (data and attributes), rounded up: a pull's worst case each."""
PULL_CEILING_BYTES = 512 * 1024 * 1024
"""A task's pulls are sized so that its messages stay under this (or the byte budget)."""
TASK_SECONDS = 15.0
"""How long a loader task reads slice after slice by default (``TaskRounds``; ``--task-seconds``)."""
IDLE_PAUSE_S = 0.05
"""A long-lived task's pause between pulls that found nothing (``TaskRounds``)."""
_M = TypeVar("_M")


@dataclass(frozen=True)
class PubSubPartition(InputPartition):
    """What one Spark task needs to pull a bounded slice of a subscription.

    Notes:
        Picklable (plain values only). ``prefetched`` holds this partition's share of the
        driver's probe deliveries (``shares``); it counts against ``max_messages``, which
        is the partition's budget for this micro-batch (the whole of ``prefetched`` when
        the probe saw less than a full pull, or in the query's first batch: then the
        partition pulls nothing more).
        ``task_seconds`` (0: one slice) makes the task long-lived: it reads slice after
        slice for that long (``TaskRounds``), each slice bounded by ``max_messages`` and
        ``max_bytes`` as the one slice is.
    """

    index: int
    subscription: str
    emulator_host: str | None
    max_messages: int
    max_bytes: int
    pull_timeout_s: float
    ack_deadline_s: int
    prefetched: tuple[PulledMessage, ...] = ()
    task_seconds: float = 0.0


def pull_size(
    partition: PubSubPartition, count: int, size: int, largest: int = MAX_MESSAGE_BYTES
) -> int:
    """Return how many messages the next pull asks for, holding ``count`` of ``size`` bytes.

    Notes:
        Pure. At least 1; at most ``MAX_PULL``, the messages left in the budget, and what the
        bytes left under ``max(max_bytes, PULL_CEILING_BYTES)`` hold at ``largest`` bytes
        each: the largest message this partition has pulled so far, ``MAX_MESSAGE_BYTES``
        (Pub/Sub's limit) before its first pull. A backlog of large messages is met by a
        first pull of ~51 and stays under the ceiling; a backlog of small ones is pulled
        1,000 at a time after that first pull (a fixed 10 MB guess made every pull ~51
        messages: ~20 times the round trips). What this does not bound: large messages
        behind a pull of small ones (one pull can then exceed the ceiling, at most by
        ``MAX_PULL`` messages; the pull after it is sized by them).
    """
    from plowline_cloud.pubsub.subscription import MAX_PULL

    ceiling = max(partition.max_bytes, PULL_CEILING_BYTES)
    by_bytes = max(1, (ceiling - size) // max(1, largest))
    return max(1, min(partition.max_messages - count, MAX_PULL, by_bytes))


def probe_size(partitions: int, max_messages: int, max_bytes: int, first: int) -> int:
    """Return how many messages the driver's probe asks for, its first being ``first`` bytes.

    Notes:
        Pure. At least 1; at most one pull (``MAX_PULL``), the batch's message budget
        (``partitions * max_messages``), and what the partitions' byte budgets together
        (``partitions * max_bytes``) hold at ``first`` bytes a message. The probe's first
        message (one pull of 1) is the only guide to the sizes: what this does not bound,
        as in ``pull_size``, is larger messages behind it (the rest of the probe is one
        pull, so at most ``MAX_PULL`` of them).
    """
    from plowline_cloud.pubsub.subscription import MAX_PULL

    by_bytes = max(1, partitions * max_bytes // max(1, first))
    return max(1, min(MAX_PULL, partitions * max_messages, by_bytes))


def shares(
    probed: Sequence[_M], partitions: int, max_messages: int, first: bool = False
) -> list[tuple[tuple[_M, ...], int]]:
    """Return each partition's (share of the probe's messages, message budget).

    Notes:
        Pure. The probe's messages are dealt round-robin (no two shares differ by more
        than one message), so every task starts with work however skewed their starts.
        Every partition then pulls on up to ``max_messages``, whatever the probe's size:
        Pub/Sub answers a pull with fewer messages than asked for whenever it likes (the
        local stack at 4 MiB a response), so the size of one pull says nothing about the
        backlog, and a batch cut to the probe capped the modes whose tasks read one slice
        (FILE_LOADS, exactly-once) at one pull a trigger (issue 37, finding 1). The one
        exception is the query's ``first`` micro-batch: its tasks start cold, seconds
        apart on a cluster, and the first to start would pull the backlog alone (the demo
        on two executors: 1,500 and 500 of 2,000); that batch is its probe, once.
        One partition keeps ``max_messages`` always: there is nothing to share.
    """
    dealt = [tuple(probed[index::partitions]) for index in range(partitions)]
    pulls_on = partitions == 1 or not first
    return [(share, max(max_messages, len(share)) if pulls_on else len(share)) for share in dealt]


ATTEMPT_PROPERTY = "plowline.attempt"
"""The Spark local property the driver sets to a micro-batch's attempt (0, 1, …) per action."""


def retried_action() -> bool:
    """Say whether this task retries a run of its partition: the driver's or Spark's own retry.

    Notes:
        Read in a task; outside one (no ``TaskContext``) it is no retry. Two retries are
        seen: the driver's retry of a micro-batch's action (``ATTEMPT_PROPERTY``, set on
        the thread that runs the action by ``streaming.BatchWriter``: Spark hands a job's
        local properties to each of its tasks), and a task Spark runs again by itself
        (``attemptNumber() > 0``: a lost executor, a failed task under
        ``spark.task.maxFailures``; issue 37, finding 3). Either way the first run had
        the partition's share of the probe: it acked it with its durable rows, nacked
        it, or died and its leases lapse so that Pub/Sub delivers it again.
        Not seen: a stage Spark resubmits after a fetch failure (a lost executor's
        shuffle output) runs its tasks as attempt 0 again, and PySpark does not expose
        the stage's attempt. Only exactly-once mode has a shuffle between reading and
        writing, and its ledger absorbs a share replayed so.
    """
    from pyspark import TaskContext

    context = TaskContext.get()
    if context is None:
        return False
    driver_retry = (context.getLocalProperty(ATTEMPT_PROPERTY) or "0") != "0"
    return driver_retry or context.attemptNumber() > 0


def pull_bounded(
    partition: PubSubPartition, weigh: Callable[[PulledMessage], int] | None = None
) -> Generator[list[PulledMessage], None, bool]:
    """Yield the partition's deliveries pull by pull, each extended to the ack deadline.

    Notes:
        ``weigh`` says what a delivery counts against ``max_bytes`` and the pull ceiling
        (``pull_size``): its ``size`` by default; the ``pubsub-records`` source counts a
        compressed batch's opened records, what its task will hold.
        A retried task or action (``retried_action``) does not replay the partition's
        share of the probe: the first attempt acked it with its durable rows or nacked it (then it
        comes back in a fresh pull), and a share whose task never ran comes back when its
        lease lapses. Replayed, a share acked already was written a second time in the
        modes that do not absorb a copy (Write API default stream, file loads).
        A pull still refused after its retries (``TransientError``) ends the slice like an
        empty pull: what was pulled goes through, the rest waits in Pub/Sub, the task does
        not fail. A receipt extension refused so is logged and the messages go on (the
        lease extender tries again; one whose lease lapses first is delivered again: a
        duplicate, which every mode absorbs, never a loss). Other errors fail the task.
        Returns (the generator's value) whether a pull was refused so.
    """
    from plowline_cloud.pubsub.subscription import Subscription

    subscription = Subscription(partition.subscription, partition.emulator_host)
    weight = weigh or _size
    prefetched = () if retried_action() else partition.prefetched
    count = len(prefetched)
    size = sum(map(weight, prefetched))  # weighed before it is yielded, as pulls are
    timeout_s = partition.pull_timeout_s
    if prefetched:
        # The driver's probe was leased when planned; planning a cold batch can outlast
        # a short ack deadline, so extend it on receipt like every pulled message.
        _extend_on_receipt(subscription, prefetched, partition.ack_deadline_s)
        yield list(prefetched)
        timeout_s = min(partition.pull_timeout_s, DRAIN_TIMEOUT_S)  # it has work already
    largest: int | None = None  # a share of the probe is no guide to the backlog's sizes
    while count < partition.max_messages and size < partition.max_bytes:
        try:
            asked = pull_size(partition, count, size, largest or MAX_MESSAGE_BYTES)
            pulled = subscription.pull(asked, timeout_s)
        except TransientError as error:
            _log.warning(
                "pull keeps failing: this partition ends here, the rest waits in Pub/Sub",
                subscription=partition.subscription,
                pulled=count,
                error=str(error),
            )
            return True
        if not pulled:
            return False
        # Receipt extension: the rows still have to reach the sink and its lease extender.
        _extend_on_receipt(subscription, pulled, partition.ack_deadline_s)
        count += len(pulled)
        sizes = [weight(message) for message in pulled]
        size += sum(sizes)
        largest = max(largest or 0, *sizes)
        timeout_s = min(partition.pull_timeout_s, DRAIN_TIMEOUT_S)
        yield pulled
    return False


class TaskRounds:
    """A task's partition as rounds: bounded slices, read one after the other while time lasts.

    Usage (in the task, each round read to its end before the next is asked for)::

        for messages in TaskRounds(partition):
            settle(process(list(messages)))   # ack before the next round is pulled

    Notes:
        The first round is ``pull_bounded(partition)`` (with the probe's share). A
        long-lived partition (``task_seconds`` > 0) then reads more rounds, each a
        ``pull_bounded`` of the same budgets without the share, for as long as the task
        is younger than ``task_seconds`` when a round is asked for. It ends sooner when
        the subscription gave nothing for ``pull_timeout_s`` (idle: the driver's probe
        starts the next micro-batch when messages come; a first round that finds
        nothing ends the task at once, as a one-slice task does), or a pull was refused
        past its retries (the driver backs off), or the reader stops asking (a round
        that failed). So the JVM plans a micro-batch once per
        ``task_seconds`` under load instead of once per slice, and a round's rows are
        written and acked as soon as the round is read: latency does not wait for the
        task to end. Memory is one round's, as a one-slice task's.
    """

    def __init__(
        self,
        partition: PubSubPartition,
        weigh: Callable[[PulledMessage], int] | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._partition = partition
        self._weigh = weigh
        self._monotonic = monotonic
        self._sleep = sleep
        self._ended = False  # a pull refused, or the subscription idle
        self._started = self._last_found = 0.0

    def __iter__(self) -> Iterator[Iterator[PulledMessage]]:
        """Yield each round's deliveries (lazy: a round pulls as it is read)."""
        self._started = self._last_found = self._monotonic()
        yield chain.from_iterable(self._round(self._partition, waits=False))
        later = replace(self._partition, prefetched=())  # the probe's share is the first's
        while not (self._ended or self._partition.task_seconds <= 0 or self._time_up()):
            yield chain.from_iterable(self._round(later, waits=True))

    def _time_up(self) -> bool:
        return self._monotonic() - self._started >= self._partition.task_seconds

    def _round(self, partition: PubSubPartition, waits: bool) -> Iterator[list[PulledMessage]]:
        """Yield one ``pull_bounded`` slice; note whether it ends the task.

        Notes:
            A round after the first that finds nothing pulls again (``IDLE_PAUSE_S``
            apart: a pull may answer at once, empty) until the subscription has been
            idle for ``pull_timeout_s`` or the task's time is up.
        """
        while True:
            pulls, empty = pull_bounded(partition, self._weigh), True
            while True:
                try:
                    pulled = next(pulls)
                except StopIteration as stop:
                    refused = bool(stop.value)
                    break
                empty = False
                yield pulled
            now = self._monotonic()
            if not empty:
                self._last_found = now
            idle = now - self._last_found >= partition.pull_timeout_s
            if refused or not empty or not waits or idle or self._time_up():
                self._ended = refused or empty
                return
            self._sleep(IDLE_PAUSE_S)


def _size(message: PulledMessage) -> int:
    return message.size


def _extend_on_receipt(
    subscription: Subscription, messages: Sequence[PulledMessage], seconds: int
) -> None:
    """Extend the leases of messages just received; a transient refusal is logged only."""
    try:
        subscription.modack([m.ack_id for m in messages], seconds)
    except TransientError as error:
        _log.warning(
            "receipt extension failed: the messages go on with their current lease",
            subscription=subscription.path,
            ack_ids=len(messages),
            error=str(error),
        )
