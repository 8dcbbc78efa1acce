"""Which deliveries repeat a bad row the writer holds or wrote lately, known by its identity.

A bad row can reach the writer more than once: Pub/Sub delivers at least once (a
duplicate delivery, an ack that arrived late or was lost with a crash: the same message
id), and the loader publishes a batch's bad rows again when its own message is
redelivered (a new message id, the same line). So a bad row is known by its identity
(``identity``: a digest of its bytes, less the moments its failure records), never by
its message id. ``Deliveries`` sorts each delivery by identity:

* ``NEW``: the first delivery seen: buffer it;
* ``HELD``: a copy of a buffered bad row: kept beside it and settled with it (acked when
  its object is written, nacked when the write fails), never written a second time;
* ``WRITTEN``: a copy of a bad row written lately: ack it, nothing to write.

Notes:
    Pure, and not thread-safe: the writer calls it under its lock. A copy is never acked
    before the object holding the bad row is written (an early ack of any delivery would
    settle it, and a crash before the write would lose it). Best effort within a window,
    like BigQuery's insertId: "lately" is the last ``remember`` identities written
    (100,000 by default, a few MB), seeded at start from the objects written within the
    lookback (``lookback``); a copy that arrives later than that, or at another
    instance, is written again (at least once). Two messages of one identity are taken
    for one bad line delivered twice, and one line of it is kept.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from enum import Enum
from typing import Generic, TypeVar

M = TypeVar("M")


class Seen(Enum):
    """What a delivery is to the writer."""

    NEW = "new"
    HELD = "held"
    WRITTEN = "written"


class Deliveries(Generic[M]):
    """Track the identities buffered (with their copies) and the ones written lately."""

    def __init__(self, remember: int = 100_000) -> None:
        if remember <= 0:
            raise ValueError(f"remember must be positive, got {remember}")
        self._remember = remember
        self._held: dict[bytes, list[M]] = {}
        self._written: OrderedDict[bytes, None] = OrderedDict()

    @property
    def remembered(self) -> int:
        """Return how many identities of written bad rows are remembered."""
        return len(self._written)

    def admit(self, key: bytes, message: M) -> Seen:
        """Sort one delivery of the bad row ``key``; a ``HELD`` copy is kept until it is settled."""
        if key in self._written:
            self._written.move_to_end(key)
            return Seen.WRITTEN
        copies = self._held.get(key)
        if copies is not None:
            copies.append(message)
            return Seen.HELD
        self._held[key] = []
        return Seen.NEW

    def settle(self, key: bytes, *, written: bool) -> list[M]:
        """Forget a buffered bad row; return its copies, to be settled as it is.

        Notes:
            ``written``: its object is durable, so later copies are ``WRITTEN``; else
            (the write failed, it is nacked) its next delivery is ``NEW`` again.
        """
        copies = self._held.pop(key, [])
        if written:
            self.remember([key])
        return copies

    def remember(self, keys: Iterable[bytes]) -> None:
        """Note bad rows as written (oldest first): their copies are ``WRITTEN`` from now on."""
        for key in keys:
            self._written[key] = None
            self._written.move_to_end(key)
            if len(self._written) > self._remember:
                self._written.popitem(last=False)
