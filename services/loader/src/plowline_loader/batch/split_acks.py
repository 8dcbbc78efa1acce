"""When a compressed delivery split over several tasks may be acked: every record durable.

In exactly-once mode the ``records`` source opens a compressed delivery into its records
before the shuffle (``record_split``), so that each record is keyed by its own event id;
the records of one delivery then land in several tasks, and no task may ack it alone.
Each task reports, per split delivery it held records of, a ``RecordAccount``: which of
its records are durable and which are held for a missing schema (``batch.schema_hold``).
The driver sums the accounts of all the tasks per ack id (``split_verdict``):

    some record neither durable nor held (a transient error,    nack: delivered again
    a record no task reported)                                  at once
    every record durable or held, one or more held              later: its ack deadline is
                                                                the hold's retry, delivered
                                                                again then
    every record durable                                         ack

A delivery delivered again comes back whole: its durable records are recognised by the
exactly-once ledger (written once), its held ones are looked at again (written once their
schema appears, failed once the hold's bound from the publish time has passed), so a
split delivery is neither lost nor held for ever.

Notes:
    Pure. Accounts name record indices, not counts, so a record reported by two tasks
    (it cannot be: one row per record, keyed to one task) would still count once.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RecordAccount:
    """What one task did with its records of one split delivery."""

    ack_id: str
    subscription: str
    records: int  # the delivery's record count (all tasks' records of it)
    durable: frozenset[int] = frozenset()  # indices of this task's records now durable
    held: frozenset[int] = frozenset()  # indices held for a missing schema


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
        A record both durable and held in two accounts counts as durable. Ack ids keep
        the order of their first account.
    """
    durable: dict[str, set[int]] = {}
    held: dict[str, set[int]] = {}
    shape: dict[str, tuple[str, int]] = {}
    for account in accounts:
        shape.setdefault(account.ack_id, (account.subscription, account.records))
        durable.setdefault(account.ack_id, set()).update(account.durable)
        held.setdefault(account.ack_id, set()).update(account.held)
    verdict = SplitVerdict({}, {}, {})
    for ack_id, (subscription, records) in shape.items():
        everything = set(range(records))
        waiting = held[ack_id] - durable[ack_id]
        if not everything <= durable[ack_id] | waiting:
            group = verdict.nack
        elif waiting & everything:
            group = verdict.later
        else:
            group = verdict.ack
        group.setdefault(subscription, []).append(ack_id)
    return verdict
