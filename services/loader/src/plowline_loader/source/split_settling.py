"""The driver settles exactly-once mode's split deliveries: ack, nack or later, from the accounts.

A compressed delivery opened into records before the shuffle (``record_split``) has its
records in several tasks; the tasks lease it while they work and report a
``RecordAccount`` each, and after the micro-batch's one ``collect()`` the driver sums
them (``source.settlement.split_verdict``) and settles here: ack the deliveries whose
records are all durable, nack those with a record not durable (delivered again at once:
the ledger recognises the durable ones), and set the hold's retry as the ack deadline
of those with held records (delivered again then).

Notes:
    Every call is tried ``acking.ACK_ATTEMPTS`` times; one that keeps failing is counted
    and logged, never raised: the writes are durable, and a delivery whose ack was lost
    comes back and is absorbed by the ledger. Between a task's end and this settling the
    delivery keeps the lease its last extension gave it (``ackDeadlineSeconds``): a task
    that outlasts another by more than that lets the other's split deliveries lapse
    (delivered again: absorbed by the ledger, never a loss). A failed Spark job reports
    nothing: its split deliveries are not settled here (the failed task nacked its own,
    the others' leases lapse), and all come back. A retried action (``streaming``) runs
    the same rows again, and settles their old ack ids again: acking or nacking an ack id
    already nacked does nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial

import structlog

from plowline_loader.source.acking import Settlement, modack, settle
from plowline_loader.source.settlement import RecordAccount, split_verdict

_log = structlog.get_logger("plowline.loader.source")


def settle_split(
    accounts: Iterable[RecordAccount], emulator_host: str | None, later_s: int
) -> Settlement:
    """Ack, nack or hand back for ``later_s`` seconds the split deliveries ``accounts`` name."""
    verdict = split_verdict(accounts)
    if not verdict.settled:
        return Settlement()
    from plowline_cloud.pubsub.subscription import Subscription

    paths = {*verdict.ack, *verdict.nack, *verdict.later}
    subscriptions = {path: Subscription(path, emulator_host) for path in paths}
    acked = nacked = later = unsettled = 0
    for path, ids in verdict.ack.items():
        failed = settle(subscriptions[path].ack, "ack", path, ids)
        acked, unsettled = acked + len(ids) - failed, unsettled + failed
    for path, ids in verdict.nack.items():
        failed = settle(subscriptions[path].nack, "nack", path, ids)
        nacked, unsettled = nacked + len(ids) - failed, unsettled + failed
    for path, ids in verdict.later.items():
        failed = settle(partial(modack, subscriptions[path], later_s), "modack", path, ids)
        later, unsettled = later + len(ids) - failed, unsettled + failed
    if unsettled:
        _log.warning("split deliveries not settled", ack_ids=unsettled)
    return Settlement(acked, nacked, unsettled, later)
