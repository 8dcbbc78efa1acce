"""One subscription's backlog: messages waiting, messages leased, ack deadlines.

Notes:
    Every method takes the backlog's own lock; callers never hold two backlog locks at
    once, so publishing to many subscriptions cannot deadlock with pulls.
    An ack id names one delivery: once its lease ends (ack, nack, expiry) the id is
    unknown and further acks or modacks of it are ignored, as the brief requires.
"""

from __future__ import annotations

import heapq
import itertools
import re
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from plowline_devstack.faults.pubsub import NO_FAULTS, PubSubFaults

# Process-wide, so ack ids never repeat across subscriptions or restarts.
_ACK_PREFIX = secrets.token_hex(4)
_ACK_COUNTER = itertools.count(1)
_ACK_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]+")


def well_formed_ack_id(ack_id: str) -> bool:
    """Return whether ``ack_id`` has the shape of an ack id this emulator hands out.

    Notes:
        Pub/Sub refuses a malformed ack id with INVALID_ARGUMENT, while a well-formed one
        that expired or was acked already is ignored (without exactly-once delivery). Ids
        from before a restart keep the shape, so they are ignored too, as expired ones.
    """
    return _ACK_ID.fullmatch(ack_id) is not None


@dataclass(slots=True)
class Entry:
    """A message as one subscription holds it; ``attempts`` counts deliveries."""

    message: Any  # google.pubsub.v1.PubsubMessage (raw protobuf), shared, never mutated
    size: int
    attempts: int = 0
    held_back: bool = False  # the out-of-order fault moved it behind later messages once


@dataclass(slots=True)
class Holder:
    """Flow-control account of one StreamingPull stream (0 = unlimited)."""

    max_messages: int = 0
    max_bytes: int = 0
    messages: int = 0
    bytes: int = 0

    def room(self) -> tuple[int, int]:
        """Return how many more messages and bytes this holder may lease."""
        messages = self.max_messages - self.messages if self.max_messages > 0 else 1 << 30
        size = self.max_bytes - self.bytes if self.max_bytes > 0 else 1 << 62
        return messages, size


@dataclass(slots=True)
class _Lease:
    entry: Entry
    deadline: float
    holder: Holder | None


@dataclass(slots=True)
class LeasedEntry:
    """One stored message leased to a puller under ``ack_id`` (the emulator's side of a pull)."""

    ack_id: str
    entry: Entry


@dataclass
class Backlog:
    """Deliver, lease, ack and redeliver the messages of one subscription."""

    name: str
    max_attempts: int = 0  # > 0 when a dead-letter policy forwards after that many
    clock: Callable[[], float] = time.monotonic
    faults: PubSubFaults = NO_FAULTS
    deleted: bool = False
    _pending: deque[Entry] = field(default_factory=deque)
    _retry: deque[Entry] = field(default_factory=deque)
    _again: deque[Entry] = field(default_factory=deque)  # duplicate deliveries, sent next pull
    _leases: dict[str, _Lease] = field(default_factory=dict)
    _expiry: list[tuple[float, str]] = field(default_factory=list)
    _dead: list[Entry] = field(default_factory=list)
    cond: threading.Condition = field(default_factory=threading.Condition)

    def enqueue(self, entries: Iterable[Entry]) -> None:
        """Add newly published messages and wake the pullers."""
        with self.cond:
            self._pending.extend(entries)
            self.cond.notify_all()

    def pull(
        self,
        limit: int,
        deadline_s: float,
        wait: float,
        holder: Holder | None = None,
        stop: Callable[[], bool] = lambda: False,
        max_bytes: int = 1 << 62,
    ) -> list[LeasedEntry]:
        """Lease up to ``limit`` messages, waiting up to ``wait`` s for the first one."""
        give_up = self.clock() + wait
        with self.cond:
            while True:
                now = self.clock()
                self._expire(now)
                batch = self._take(now, limit, deadline_s, holder, max_bytes)
                if batch or self.deleted or stop() or now >= give_up:
                    return batch
                timeout = give_up - now
                if self._expiry:
                    timeout = min(timeout, max(self._expiry[0][0] - now, 0.0) + 0.001)
                self.cond.wait(timeout)

    def acknowledge(self, ack_ids: Iterable[str]) -> list[Entry]:
        """End the leases of ``ack_ids`` for good; return the entries acked."""
        done: list[Entry] = []
        with self.cond:
            for ack_id in ack_ids:
                lease = self._leases.pop(ack_id, None)
                if lease is None:
                    continue
                self._release(lease)
                if self.faults.active and self.faults.ack_arrives_late():
                    self._retry.append(lease.entry)  # answered OK, yet delivered again
                else:
                    done.append(lease.entry)
            if done or self.faults.active:
                self._compact()
                self.cond.notify_all()
        return done

    def modify(self, ack_ids: Iterable[str], seconds: int) -> None:
        """Move the deadlines of ``ack_ids`` to now + ``seconds``; 0 redelivers at once."""
        with self.cond:
            now = self.clock()
            for ack_id in ack_ids:
                lease = self._leases.get(ack_id)
                if lease is None:
                    continue
                if seconds == 0:
                    del self._leases[ack_id]
                    self._release(lease)
                    self._retry.append(lease.entry)
                else:
                    lease.deadline = now + seconds
                    heapq.heappush(self._expiry, (lease.deadline, ack_id))
            self._compact()
            self.cond.notify_all()

    def wake(self) -> None:
        """Wake every waiting puller so it re-checks its stop condition."""
        with self.cond:
            self.cond.notify_all()

    def drop(self) -> None:
        """Mark the subscription deleted and release its pullers."""
        with self.cond:
            self.deleted = True
            self._pending.clear()
            self._retry.clear()
            self._again.clear()
            self._leases.clear()
            self.cond.notify_all()

    def take_dead(self) -> list[Entry]:
        """Return and forget the entries that ran out of delivery attempts."""
        with self.cond:
            dead, self._dead = self._dead, []
        return dead

    def backlog_size(self) -> int:
        """Return how many messages are waiting or leased."""
        with self.cond:
            return len(self._pending) + len(self._retry) + len(self._again) + len(self._leases)

    def _take(
        self, now: float, limit: int, deadline_s: float, holder: Holder | None, max_bytes: int
    ) -> list[LeasedEntry]:
        room, room_bytes = holder.room() if holder is not None else (1 << 30, 1 << 62)
        room = min(room, limit)
        room_bytes = min(room_bytes, max_bytes)
        batch: list[LeasedEntry] = []
        if room <= 0 or room_bytes <= 0:
            return batch
        self._retry.extend(self._again)
        self._again.clear()
        size = 0
        deadline = now + deadline_s
        while len(batch) < room:
            source = self._retry if self._retry else self._pending
            if not source:
                break
            entry = source[0]
            # Always hand out at least one message, however large, or a big one starves.
            if batch and size + entry.size > room_bytes:
                break
            source.popleft()
            if self.faults.active and source is self._pending and self._hold_back(entry):
                continue
            if self.max_attempts and entry.attempts >= self.max_attempts:
                self._dead.append(entry)
                continue
            entry.attempts += 1
            size += entry.size
            ack_id = f"{_ACK_PREFIX}-{next(_ACK_COUNTER):x}"
            self._leases[ack_id] = _Lease(entry, deadline, holder)
            heapq.heappush(self._expiry, (deadline, ack_id))
            batch.append(LeasedEntry(ack_id, entry))
            if self.faults.active and self.faults.delivered_twice():
                self._again.append(Entry(entry.message, entry.size, entry.attempts))
        if holder is not None:
            holder.messages += len(batch)
            holder.bytes += size
        return batch

    def _hold_back(self, entry: Entry) -> bool:
        """Move ``entry`` behind the messages published after it, when the fault says so."""
        if entry.held_back or entry.message.ordering_key or not self.faults.held_back():
            return False
        entry.held_back = True
        self._pending.append(entry)
        return True

    def _expire(self, now: float) -> None:
        expiry = self._expiry
        while expiry and expiry[0][0] <= now:
            _, ack_id = heapq.heappop(expiry)
            lease = self._leases.get(ack_id)
            if lease is not None and lease.deadline <= now:
                del self._leases[ack_id]
                self._release(lease)
                self._retry.append(lease.entry)

    def _compact(self) -> None:
        # Acked and re-deadlined leases leave stale heap items behind; rebuild the heap
        # when they dominate so memory stays proportional to the live leases.
        if len(self._expiry) > 2 * len(self._leases) + 4096:
            self._expiry = [(lease.deadline, ack_id) for ack_id, lease in self._leases.items()]
            heapq.heapify(self._expiry)

    @staticmethod
    def _release(lease: _Lease) -> None:
        holder = lease.holder
        if holder is not None:
            holder.messages -= 1
            holder.bytes -= lease.entry.size
