"""The one rule that settles a Pub/Sub message, whoever holds it: ack, nack, park or later.

A message is one delivery: a plain line (one record) or a compressed batch (many records,
``compressed_input``). Processing never touches an ack id; it says, per record, whether its
outcome is durable (a row, a failed insert or a bad row, written and returned), held
(waiting for a missing schema: ``batch.schema_hold``) or neither (a transient error
stopped it, or it was never read). An account of that (``RecordAccount``) is settled so:

    every record durable                                  ACK
    nothing durable, a record neither durable nor held    NACK: delivered again at once;
                                                          nothing of it was written, so
                                                          nothing is written twice
    nothing durable, every record held                    PARK
    some durable, the rest held or not durable            PARK: never handed back while
                                                          the loader lives

PARK gives the message to the driver's ``source.holding.Holding``: it keeps the message
leased, writes the records not yet durable when they can be (their schema appeared, the
failing dependency answers again) and acks the message once every record is durable. Its
bound decides when a message cannot be kept (``Holding``): a parked message of which nothing
was written is then handed back for later (LATER: its ack deadline set to the hold's retry,
delivered again then, nothing rewritten); one with durable records is kept until it
settles or the loader stops (then it is nacked: the one case that writes records twice,
and only at a stop that the grace period did not cover).

Exactly-once mode's split deliveries (``record_split``: one compressed batch's records in
several tasks) are settled by the driver from the tasks' accounts (``split_verdict``) with
the same rule, but without PARK: no process holds all of their records, so a delivery that
would be parked is handed back instead (LATER while only held records wait, NACK when a
record failed), and the exactly-once ledger skips the records already written.

Notes:
    Pure. Accounts name record indices, not counts, so a record reported twice counts once;
    a record both durable and held counts as durable.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from plowline_cloud.pubsub.pulled import PulledMessage


class Verdict(enum.Enum):
    """What the owner does with a message."""

    ACK = "ack"
    NACK = "nack"
    PARK = "park"
    LATER = "later"


@dataclass(frozen=True, slots=True)
class RecordAccount:
    """What became of the records of one delivery (in one task, or all tasks summed).

    ``records`` is how many records the delivery has (``None``: not known, the delivery
    was not read to its end); ``durable`` and ``held`` are record indices.
    """

    ack_id: str
    subscription: str
    records: int | None
    durable: frozenset[int] = frozenset()
    held: frozenset[int] = frozenset()

    @property
    def everything(self) -> frozenset[int] | None:
        """Every record index of the delivery, when known."""
        return None if self.records is None else frozenset(range(self.records))


@dataclass(frozen=True, slots=True)
class Parcel:
    """A parked delivery on its way to the driver's ``Holding``: itself and what is durable.

    Notes:
        Picklable (a task reports it). ``durable`` are the indices of its records whose
        outcome is durable already: the holding writes only the others, so no record of
        a parked delivery is written twice while the loader lives.
    """

    delivery: PulledMessage
    durable: frozenset[int] = frozenset()

    @property
    def ack_id(self) -> str:
        """The ack id that settles the delivery."""
        return self.delivery.ack_id


def verdict(account: RecordAccount, can_park: bool = True) -> Verdict:
    """Return how the owner settles the delivery of ``account`` (see the module's table)."""
    everything = account.everything
    waiting = account.held - account.durable
    if everything is not None and everything <= account.durable:
        return Verdict.ACK
    all_held = everything is not None and everything <= account.durable | waiting
    if not account.durable and not all_held:
        return Verdict.NACK
    if can_park:
        return Verdict.PARK
    return Verdict.LATER if all_held else Verdict.NACK


@dataclass(frozen=True, slots=True)
class SplitVerdict:
    """How the driver settles the split deliveries of a micro-batch, ack ids by subscription."""

    ack: dict[str, list[str]]
    nack: dict[str, list[str]]
    later: dict[str, list[str]]

    @property
    def settled(self) -> int:
        """Return how many split deliveries the verdict names."""
        return sum(
            len(ids) for group in (self.ack, self.nack, self.later) for ids in group.values()
        )


def split_verdict(accounts: Iterable[RecordAccount]) -> SplitVerdict:
    """Return which split deliveries to ack, to nack and to hand back for later.

    Notes:
        The tasks' accounts of one ack id are summed first (indices united); ack ids keep
        the order of their first account. No PARK (see the module's notes).
    """
    summed: dict[str, RecordAccount] = {}
    for account in accounts:
        seen = summed.get(account.ack_id)
        if seen is None:
            summed[account.ack_id] = account
            continue
        summed[account.ack_id] = RecordAccount(
            account.ack_id,
            seen.subscription,
            seen.records,
            seen.durable | account.durable,
            seen.held | account.held,
        )
    result = SplitVerdict({}, {}, {})
    groups = {Verdict.ACK: result.ack, Verdict.NACK: result.nack, Verdict.LATER: result.later}
    for ack_id, account in summed.items():
        groups[verdict(account, can_park=False)].setdefault(account.subscription, []).append(ack_id)
    return result
