"""Which deliveries repeat a message the writer holds or wrote lately (Pub/Sub redelivers).

Pub/Sub delivers at least once: a message can come again under a new ack id while its
first delivery is still buffered (a duplicate delivery), or after its object was written
(an ack that arrived late, a duplicate delivered later). ``Deliveries`` sorts each
delivery by its message id, which is the same on every delivery:

* ``NEW``: the first delivery seen: buffer it;
* ``HELD``: a copy of a buffered message: kept beside it and settled with it (acked when
  its object is written, nacked when the write fails), never written a second time;
* ``WRITTEN``: a copy of a message written lately: ack it, nothing to write.

Notes:
    Pure, and not thread-safe: the writer calls it under its lock. A copy is never acked
    before the object holding the message is written (an early ack of any delivery would
    settle the message, and a crash before the write would lose it). "Lately" is the last
    ``remember`` message ids written (100,000 by default, a few MB): a copy that arrives
    later than that, at another instance or after a restart is written again (at least
    once; unparseable messages are still written once, their objects being named after
    the message).
"""

from __future__ import annotations

from collections import OrderedDict
from enum import Enum
from typing import Generic, Protocol, TypeVar


class _Identified(Protocol):
    @property
    def message_id(self) -> str: ...


M = TypeVar("M", bound=_Identified)


class Seen(Enum):
    """What a delivery is to the writer."""

    NEW = "new"
    HELD = "held"
    WRITTEN = "written"


class Deliveries(Generic[M]):
    """Track the message ids buffered (with their copies) and the ones written lately."""

    def __init__(self, remember: int = 100_000) -> None:
        if remember <= 0:
            raise ValueError(f"remember must be positive, got {remember}")
        self._remember = remember
        self._held: dict[str, list[M]] = {}
        self._written: OrderedDict[str, None] = OrderedDict()

    def admit(self, message: M) -> Seen:
        """Sort one delivery; a ``HELD`` copy is kept until its message is settled."""
        message_id = message.message_id
        if message_id in self._written:
            self._written.move_to_end(message_id)
            return Seen.WRITTEN
        copies = self._held.get(message_id)
        if copies is not None:
            copies.append(message)
            return Seen.HELD
        self._held[message_id] = []
        return Seen.NEW

    def settle(self, message: M, *, written: bool) -> list[M]:
        """Forget a buffered message; return its copies, to be settled as it is.

        Notes:
            ``written``: its object is durable, so later copies are ``WRITTEN``; else
            (the write failed, it is nacked) its next delivery is ``NEW`` again.
        """
        copies = self._held.pop(message.message_id, [])
        if written:
            self._written[message.message_id] = None
            if len(self._written) > self._remember:
                self._written.popitem(last=False)
        return copies
