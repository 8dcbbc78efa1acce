"""The driver keeps the deliveries that must wait: leased, retried, acked once every record is durable.

A task parks a delivery (``settlement.Verdict.PARK``) when some of its records are durable
and others are not yet (held for a missing schema, or stopped by a transient error), or
when every record is held. Handing such a delivery back to Pub/Sub would write its durable
records again on every redelivery (up to ~360 copies over the schema hold's 6 hours in
the Write API default stream, which absorbs none: issue 37, finding 2). So the task
reports it (``partition.PartitionReport.parked``) and the driver's ``Holding`` takes it:

- **Leases.** Every parked delivery's ack deadline is moved to a full ``ack_deadline_s``
  when it is taken and every ``lease_interval_s`` after (one thread, all subscriptions).
- **Retries.** A delivery is tried again once its wait is over (``retry_s``, the schema
  hold's, while a record is held; after a transient error from 1 s, doubling to
  ``retry_s``): its records not yet durable (never the durable ones) go through the
  processor in this process, in order. A held record is written once its schema appears,
  or becomes ``loader_iglu_error`` once the hold's bound from its publish time passed
  (``batch.schema_hold``): nothing waits for ever.
- **Settling.** A delivery is acked as soon as every record is durable. Only what this
  process cannot keep is handed back: past ``max_bytes`` of parked deliveries, one of
  which nothing was written is given back for later (its ack deadline set to ``retry_s``:
  delivered again then, nothing rewritten); at a stop (``release``), every delivery still
  parked is nacked (its durable records are then written again when it comes back: the
  one case left, bounded to a stop that the grace period did not cover).

Notes:
    Thread-safe: the micro-batch thread takes and the holding's thread retries and
    extends, under one lock. The outcomes of retries reach the driver's totals and
    metrics through ``observer``. Adapters are passed in (``subscriptions``, ``processor``):
    the unit tests and the model (``tests/unit/loader/test_loader_delivery_model.py``) run
    it over fakes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Protocol

import structlog
from plowline_core.errors import TransientError

from plowline_loader.batch.message import Message
from plowline_loader.batch.outcome import BatchOutcome, PartlyDelivered
from plowline_loader.compressed_input import DEFAULT_DECOMPRESSION, Decompression, items_of
from plowline_loader.source.acking import settle
from plowline_loader.source.settlement import Parcel

_log = structlog.get_logger("plowline.loader.holding")

MAX_HOLDING_BYTES = 64 * 1024 * 1024
"""Parked deliveries' bytes a driver keeps; past it, one with nothing written goes back to wait."""
FIRST_RETRY_S = 1.0
"""A delivery stopped by a transient error is tried again this soon, then doubling."""


class Settling(Protocol):
    """What the holding needs of a subscription."""

    def ack(self, ack_ids: Sequence[str]) -> None:
        """Acknowledge ``ack_ids``."""
        ...

    def nack(self, ack_ids: Sequence[str]) -> None:
        """Hand ``ack_ids`` back for redelivery at once."""
        ...

    def modack(self, ack_ids: Sequence[str], seconds: int) -> None:
        """Set the ack deadline of ``ack_ids`` to now + ``seconds``."""
        ...


class Writer(Protocol):
    """What the holding needs of the processor: ``BatchProcessor.process``."""

    def process(self, messages: Sequence[Message]) -> BatchOutcome:
        """Write the messages' outcomes; return once durable."""
        ...


@dataclass
class _Kept:
    parcel: Parcel
    durable: set[int]
    due: float
    wait_s: float
    held_schemas: frozenset[str] = field(default_factory=frozenset)
    held: int = 0
    records: int | None = None  # known once it was opened here

    @property
    def whole(self) -> bool:
        return self.records is not None and self.durable >= set(range(self.records))


class Holding:
    """The driver's keeper of parked deliveries (see the module docstring)."""

    def __init__(
        self,
        subscriptions: Callable[[str], Settling],
        processor: Callable[[], Writer],
        *,
        ack_deadline_s: int = 60,
        lease_interval_s: float = 20.0,
        retry_s: float = 60.0,
        max_bytes: int = MAX_HOLDING_BYTES,
        decompression: Decompression = DEFAULT_DECOMPRESSION,
        observer: Callable[[BatchOutcome], None] | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        background: bool = True,
    ) -> None:
        self._subscriptions = subscriptions
        self._processor = processor
        self._deadline_s = ack_deadline_s
        self._interval_s = lease_interval_s
        self._retry_s = retry_s
        self._max_bytes = max_bytes
        self._decompression = decompression
        self._observer = observer
        self._monotonic = monotonic
        self._kept: dict[str, _Kept] = {}
        self._lock = threading.RLock()  # the kept deliveries
        self._trying = threading.Lock()  # one retry at a time (it writes, unlocked)
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        self._background = background  # False: the caller extends and retries (tests, the model)
        self.acked = self.handed_back = 0

    @property
    def parked(self) -> int:
        """How many deliveries are kept now."""
        with self._lock:
            return len(self._kept)

    @property
    def held(self) -> tuple[frozenset[str], int]:
        """The schemas the kept records wait for, and how many records wait for one."""
        with self._lock:
            kept = list(self._kept.values())
        schemas = frozenset().union(*(k.held_schemas for k in kept))
        return schemas, sum(k.held for k in kept)

    def observe(self, observer: Callable[[BatchOutcome], None]) -> None:
        """Send the outcome of every retry that wrote something to ``observer``."""
        self._observer = observer

    def take(self, parcels: Sequence[Parcel], held_schemas: frozenset[str] = frozenset()) -> None:
        """Keep ``parcels`` (a task's parked deliveries): leased from now, tried when due."""
        if not parcels:
            return
        now = self._monotonic()
        later: list[Parcel] = []
        with self._lock:
            size = sum(k.parcel.delivery.size for k in self._kept.values())
            by_message = {k.parcel.delivery.message_id: k for k in self._kept.values()}
            for parcel in parcels:
                if parcel.ack_id in self._kept:
                    continue
                again = by_message.get(parcel.delivery.message_id)
                if again is not None:
                    # Delivered again (a lease that lapsed): keep one, under the live ack
                    # id, with what either copy made durable, so no record is written twice.
                    del self._kept[again.parcel.ack_id]
                    again.parcel = Parcel(parcel.delivery, parcel.durable)
                    again.durable |= parcel.durable
                    self._kept[parcel.ack_id] = again
                    continue
                if not parcel.durable and size + parcel.delivery.size > self._max_bytes:
                    later.append(parcel)
                    continue
                size += parcel.delivery.size
                self._kept[parcel.ack_id] = _Kept(
                    parcel, set(parcel.durable), now + self._retry_s, self._retry_s, held_schemas
                )
            taken = [p for p in parcels if p not in later]
        self._settle("modack", taken, self._deadline_s)
        if later:
            self.handed_back += len(later)
            self._settle("modack", later, int(self._retry_s))
            _log.warning(
                "holding full: deliveries with nothing written go back to Pub/Sub to wait",
                deliveries=len(later),
                max_bytes=self._max_bytes,
            )
        self._ensure_thread()

    def retry_due(self, everything: bool = False) -> BatchOutcome:
        """Try the kept deliveries whose wait is over (or all); ack those now whole."""
        with self._trying:
            now = self._monotonic()
            with self._lock:
                due = [k for k in self._kept.values() if everything or k.due <= now]
            outcome = BatchOutcome()
            for kept in due:  # only this thread changes a kept delivery: no lock needed
                outcome = outcome.merge(self._try(kept, now))
            with self._lock:
                whole = [k.parcel for k in due if k.whole and k.parcel.ack_id in self._kept]
                for parcel in whole:
                    del self._kept[parcel.ack_id]
        if whole:
            self._settle("ack", whole)
            self.acked += len(whole)
        if outcome.events_in and self._observer is not None:
            self._observer(outcome)
        return outcome

    def extend(self) -> None:
        """Move every kept delivery's ack deadline to a full ``ack_deadline_s`` from now."""
        with self._lock:
            parcels = [k.parcel for k in self._kept.values()]
        self._settle("modack", parcels, self._deadline_s)

    def release(self) -> int:
        """Stop keeping: nack every delivery still kept (a stop); return how many."""
        self._stopped.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=self._interval_s + 30)
        with self._lock:
            parcels = [k.parcel for k in self._kept.values()]
            self._kept.clear()
        if parcels:
            _log.warning(
                "stopping with parked deliveries: handed back (their written records "
                "will be written again when they come back)",
                deliveries=len(parcels),
            )
            self._settle("nack", parcels)
        self.handed_back += len(parcels)
        return len(parcels)

    def _try(self, kept: _Kept, now: float) -> BatchOutcome:
        """Write ``kept``'s records not yet durable; note what became durable and what waits."""
        items = list(items_of(kept.parcel.delivery, self._decompression))
        kept.records = len(items)
        pending = {index: item for index, item in enumerate(items) if index not in kept.durable}
        if not pending:
            return BatchOutcome()
        by_id = {item.message_id: index for index, item in pending.items()}
        try:
            outcome = self._processor().process(list(pending.values()))
            not_durable: frozenset[str] = frozenset()
        except PartlyDelivered as partly:
            outcome, not_durable = partly.outcome, partly.not_durable
        except TransientError as error:
            kept.wait_s = min(self._retry_s, max(FIRST_RETRY_S, kept.wait_s * 2))
            kept.due = now + kept.wait_s
            _log.warning(
                "parked delivery not written yet", error=str(error), retry_in_s=kept.wait_s
            )
            return BatchOutcome()
        waiting = outcome.held_ids | not_durable
        kept.durable.update(index for item_id, index in by_id.items() if item_id not in waiting)
        kept.held = len(outcome.held_ids)
        kept.held_schemas = outcome.held_schemas
        kept.wait_s = self._retry_s if outcome.held_ids else FIRST_RETRY_S
        kept.due = now + kept.wait_s
        return outcome

    def _settle(self, verb: str, parcels: Sequence[Parcel], seconds: int = 0) -> None:
        by_path: dict[str, list[str]] = {}
        for parcel in parcels:
            by_path.setdefault(parcel.delivery.subscription, []).append(parcel.ack_id)
        for path, ids in by_path.items():
            subscription = self._subscriptions(path)
            calls = {"ack": subscription.ack, "nack": subscription.nack}
            call = calls.get(verb) or partial(subscription.modack, seconds=seconds)
            settle(call, verb, path, ids)  # tried ACK_ATTEMPTS times, a failure logged

    def _ensure_thread(self) -> None:
        with self._lock:
            if self._thread is not None or self._stopped.is_set() or not self._background:
                return
            self._thread = threading.Thread(target=self._run, name="plowline-holding", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        tick = min(self._interval_s, FIRST_RETRY_S)
        last_extension = self._monotonic()
        while not self._stopped.wait(tick):
            try:
                if self._monotonic() - last_extension >= self._interval_s:
                    self.extend()
                    last_extension = self._monotonic()
                self.retry_due()
            except Exception:
                _log.exception("holding: a retry failed; the deliveries stay kept")
