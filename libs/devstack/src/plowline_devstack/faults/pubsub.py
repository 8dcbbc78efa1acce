"""The Pub/Sub faults of the catalogue (:mod:`.catalogue`), as the broker draws them.

Each answers one question the broker or a stream asks at the moment the real service could
fail, with a yes drawn from the fault's own generator (seeded with the plan's seed and the
fault's name, so a run with the same seed and the same traffic fails the same way):

* ``late-ack-redelivery``: is this ack one that arrived after the deadline? Then the
  Acknowledge call still answers OK, but the lease ends unacked and the message is
  delivered again (Pub/Sub: a late ack "may succeed, but the message may be redelivered").
* ``duplicate-delivery``: is this delivery sent twice? Then a copy is delivered on a later
  pull under its own ack id; acking one copy does not settle the other.
* ``out-of-order-delivery``: is this message held back? Then it goes behind the messages
  published after it (once; messages with an ordering key keep their order).
* ``streaming-pull-unavailable``: does the stream break now? Then the messages about to be
  sent are handed back and the stream ends with UNAVAILABLE; the client reopens it.
  ``after_seconds`` breaks every stream that long after it opened.
* ``acknowledge-unavailable``: is this unary Acknowledge or ModifyAckDeadline call refused?
  Then it answers UNAVAILABLE and nothing is applied (the leases run on, a nack is not
  done); with ``seconds`` every such call is refused that long after one was (an outage).
  Acks sent on a StreamingPull's request stream are not affected.
* ``pull-unavailable``: is this unary Pull refused? Then it answers UNAVAILABLE and
  nothing is leased (the messages stay available); ``seconds`` as above.
* ``modify-ack-deadline-unavailable``: is this unary ModifyAckDeadline call refused? Then
  it answers UNAVAILABLE and nothing is applied (no lease extended, no nack done) while
  Acknowledge still succeeds; ``seconds`` as above.

Notes:
    With no plan every answer is no and nothing is drawn: the kind emulator is unchanged.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from plowline_devstack.faults.catalogue import Params
from plowline_devstack.faults.draws import FaultDraws

LATE_ACK = "late-ack-redelivery"
DUPLICATE = "duplicate-delivery"
OUT_OF_ORDER = "out-of-order-delivery"
UNAVAILABLE = "streaming-pull-unavailable"
ACK_UNAVAILABLE = "acknowledge-unavailable"
PULL_UNAVAILABLE = "pull-unavailable"
MODACK_UNAVAILABLE = "modify-ack-deadline-unavailable"
UNAVAILABLE_MESSAGE = "The service was unable to fulfill your request. Please try again."


class PubSubFaults(FaultDraws):
    """Draw the Pub/Sub faults a plan turned on."""

    def __init__(
        self,
        plan: Mapping[str, Params] | None = None,
        seed: int = 0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(plan, seed)
        lifetime = float(self.plan.get(UNAVAILABLE, {}).get("after_seconds", 0.0))
        self.stream_lifetime: float | None = lifetime or None
        self.active = bool(self.plan)  # lets the hot paths skip every draw when none is on
        self._clock = clock
        self._outages = {
            name: _Outage(float(self.plan.get(name, {}).get("seconds", 0.0)))
            for name in (ACK_UNAVAILABLE, PULL_UNAVAILABLE, MODACK_UNAVAILABLE)
        }
        self.acks_refused = 0  # Acknowledge/ModifyAckDeadline calls refused so far
        self.pulls_refused = 0  # unary Pull calls refused so far
        self.modacks_refused = 0  # ModifyAckDeadline calls refused (that fault alone)

    def ack_arrives_late(self) -> bool:
        """Return True when an ack is to count as arriving after the deadline."""
        return self.draw(LATE_ACK)

    def delivered_twice(self) -> bool:
        """Return True when a delivery is to be sent again later."""
        return self.draw(DUPLICATE)

    def held_back(self) -> bool:
        """Return True when a message is to go behind later ones."""
        return self.draw(OUT_OF_ORDER)

    def ack_call_refused(self) -> bool:
        """Return True when an Acknowledge/ModifyAckDeadline call is to answer UNAVAILABLE."""
        refused = self._refused(ACK_UNAVAILABLE)
        self.acks_refused += refused
        return refused

    def pull_refused(self) -> bool:
        """Return True when a unary Pull is to answer UNAVAILABLE (nothing leased)."""
        refused = self._refused(PULL_UNAVAILABLE)
        self.pulls_refused += refused
        return refused

    def modack_refused(self) -> bool:
        """Return True when a ModifyAckDeadline call alone is to answer UNAVAILABLE."""
        refused = self._refused(MODACK_UNAVAILABLE)
        self.modacks_refused += refused
        return refused

    def _refused(self, name: str) -> bool:
        """Draw ``name``; once it strikes, every call is refused for its ``seconds``."""
        outage = self._outages[name]
        now = self._clock()
        if now < outage.until:
            return True
        if not self.draw(name):
            return False
        outage.until = now + outage.seconds
        return True

    def stream_breaks(self) -> bool:
        """Return True when a StreamingPull is to end with UNAVAILABLE instead of responding."""
        return self.draw(UNAVAILABLE)


class _Outage:
    """When a refusing fault's outage ends (``seconds`` after it struck)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.until = float("-inf")


NO_FAULTS = PubSubFaults()
