"""Ack Pub/Sub deliveries in the Spark task that processed them, once they are durable.

Usage (``partition.StreamingPartition``, in every task of a micro-batch)::

    def process(messages: list[PulledMessage]) -> Collection[str] | HandBack | None:
        ...  # transform, insert, publish; return the ack ids NOT yet durable (or None)

    settlement = AckingPartition(process, emulator_host, ack_deadline_s, lease_interval_s)(
        messages
    )

Notes:
    ``AckingPartition`` runs on the executor, in a partition's task (the processing
    source's ``read()``, or exactly-once mode's ``mapPartitions``): it collects the
    partition's messages (bounded by the source's per-partition budgets), starts a lease
    extender over their ack ids, calls the processor, then acks every ack id the processor
    did not hand back, and nacks the ones it did (redelivered at once); the ones it keeps
    (``HandBack.kept``: parked deliveries, and exactly-once mode's compressed deliveries
    split over several tasks) it extends once more (``KEPT_LEASE_S``) and leaves for
    the driver to settle (``holding``, ``split_settling``). Which is which is the one
    rule of ``settlement``; this class only carries it out. If the processor raises, every ack id of the partition is
    nacked and the error propagates, so the task fails and Spark retries or stops the
    query: the messages come back, none is lost.
    The processor must only return after its writes are durable (insert returned,
    publish futures resolved): returning is the promise that acking is safe.
    Once it returned, nothing fails the task: an ack or nack that keeps failing
    (``ACK_ATTEMPTS`` tries, each with the client's own retry) is logged and counted in
    the returned ``Settlement``. Failing the task there would gain nothing: the writes
    are durable, and the redelivery is absorbed downstream (insertId within BigQuery's
    window, the ledger in exactly-once mode), whereas a failed task is retried and
    writes the whole partition again.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Iterable
from contextlib import ExitStack
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Generic, TypeVar

import structlog
from plowline_cloud.pubsub.pulled import AckHandle
from plowline_core.errors import PlowlineError

from plowline_loader.source.lease import LeaseExtender

if TYPE_CHECKING:
    from plowline_cloud.pubsub.subscription import Subscription

_log = structlog.get_logger("plowline.loader.source")


_D = TypeVar("_D", bound=AckHandle)


@dataclass(frozen=True, slots=True)
class HandBack:
    """What a processor hands back: ``now`` is nacked (delivered again at once), ``kept``
    is extended and left to the driver (neither acked nor nacked here, whatever else names
    it); the rest is acked."""

    now: Collection[str] = ()
    kept: Collection[str] = ()


PartitionProcessor = Callable[[list[_D]], Collection[str] | HandBack | None]

KEPT_LEASE_S = 120
"""Lease on a kept delivery until the driver takes it (beyond a long-lived task's end)."""

ACK_ATTEMPTS = 3
"""Tries of one settling call (ack or nack of a subscription's ids) before it is given up."""


@dataclass(frozen=True, slots=True)
class Settlement:
    """How a partition's deliveries were settled after the processor returned."""

    acked: int = 0
    nacked: int = 0
    unsettled: int = 0  # ack ids whose ack or nack kept failing (they come back on their own)
    later: int = 0  # ack ids handed back for later (their ack deadline set: ``split_settling``)


@dataclass(frozen=True)
class AckingPartition(Generic[_D]):
    """A picklable ``foreachPartition`` function: lease, process, then ack or nack.

    Notes:
        ``lease_interval_s`` must be below ``ack_deadline_s``; one extension may fail
        without the lease lapsing when it is at most a third of it (the default).
    """

    process: PartitionProcessor[_D]
    emulator_host: str | None = None
    ack_deadline_s: int = 60
    lease_interval_s: float = 20.0

    def __call__(self, rows: Iterable[_D]) -> Settlement:
        """Process one partition's deliveries and settle them."""
        batch = list(rows)
        if not batch:
            return Settlement()
        from plowline_cloud.pubsub.subscription import Subscription

        ack_ids = _ack_ids_by_subscription(batch)
        subscriptions = {path: Subscription(path, self.emulator_host) for path in ack_ids}
        with ExitStack() as leases:
            for path, ids in ack_ids.items():
                leases.enter_context(
                    LeaseExtender(
                        subscriptions[path],
                        ids,
                        deadline_s=self.ack_deadline_s,
                        interval_s=self.lease_interval_s,
                    )
                )
            try:
                returned = self.process(batch)
            except BaseException:
                _nack_after_failure(subscriptions, ack_ids)
                raise
            hand_back = returned if isinstance(returned, HandBack) else HandBack(returned or ())
            kept = frozenset(hand_back.kept)
            not_durable = frozenset(hand_back.now) - kept
            settlement = Settlement()
            for path, ids in ack_ids.items():
                subscription = subscriptions[path]
                done = [i for i in ids if i not in not_durable and i not in kept]
                undone = [i for i in ids if i in not_durable]
                extended = [i for i in ids if i in kept]
                failed_acks = settle(subscription.ack, "ack", path, done)
                failed_nacks = settle(subscription.nack, "nack", path, undone)
                # Leased until the driver takes them over, after the task's last round (a
                # long-lived task reports at its end); one that fails leaves the lease of
                # the last extension (at least two thirds of a deadline).
                extend = partial(modack, subscription, max(self.ack_deadline_s, KEPT_LEASE_S))
                settle(extend, "modack", path, extended)
                settlement = Settlement(
                    settlement.acked + len(done) - failed_acks,
                    settlement.nacked + len(undone) - failed_nacks,
                    settlement.unsettled + failed_acks + failed_nacks,
                )
            return settlement


def settle(call: Callable[[list[str]], None], verb: str, path: str, ids: list[str]) -> int:
    """Call ``call(ids)`` up to ``ACK_ATTEMPTS`` times; return how many ids stayed unsettled."""
    if not ids:
        return 0
    for attempt in range(1, ACK_ATTEMPTS + 1):
        try:
            call(ids)
            return 0
        except PlowlineError as error:
            _log.warning(
                f"{verb}_failed",
                subscription=path,
                ack_ids=len(ids),
                attempt=attempt,
                of=ACK_ATTEMPTS,
                error=str(error),
            )
    return len(ids)


def modack(subscription: Subscription, seconds: int, ids: list[str]) -> None:
    """Set the ack deadline of ``ids`` to ``seconds`` from now (``settle``'s call for later)."""
    subscription.modack(ids, seconds)


def _nack_after_failure(
    subscriptions: dict[str, Subscription], ack_ids: dict[str, list[str]]
) -> None:
    # Best effort: the processor's error is the one to report. Ack ids not nacked here
    # come back anyway when their deadline passes.
    for path, ids in ack_ids.items():
        try:
            subscriptions[path].nack(ids)
        except PlowlineError as error:
            _log.warning("nack_failed", subscription=path, ack_ids=len(ids), error=str(error))


def _ack_ids_by_subscription(rows: list[_D]) -> dict[str, list[str]]:
    # A split delivery's records are many rows under one ack id: each id once.
    grouped: dict[str, dict[str, None]] = defaultdict(dict)
    for row in rows:
        grouped[row.subscription][row.ack_id] = None
    return {path: list(ids) for path, ids in grouped.items()}
