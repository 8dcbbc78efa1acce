"""What a batch became, and the two ways a batch fails to add up or to finish.

``BatchOutcome`` is the count the loader reports per batch (and the driver sums);
``PartlyDelivered`` is the one error after which part of a batch must still be acked;
``AccountingError`` is a bug: outcomes that do not add up to the messages.

Notes:
    Pure and picklable: executors hand outcomes to the driver.
    Invariant: ``good + bad + failed == events_in`` (``check_accounts``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from plowline_core.errors import TransientError


@dataclass(frozen=True, slots=True)
class BatchOutcome:
    """What one batch became; picklable, so executors can hand it to the driver.

    Notes:
        ``good + bad + failed == events_in``: a message held for a missing schema
        (``schema_hold``) is not counted in, it is named in ``held_ids``. Latencies are seconds, one per landed row
        (collector_tstamp → insert) and per landed message with a publish time
        (publish → insert).
    """

    events_in: int = 0
    good: int = 0
    bad: int = 0
    failed: int = 0
    types_published: int = 0
    duration_s: float = 0.0
    bad_by_code: Mapping[str, int] = field(default_factory=dict)
    failed_by_reason: Mapping[str, int] = field(default_factory=dict)
    collector_latency_s: tuple[float, ...] = ()
    publish_latency_s: tuple[float, ...] = ()
    held_ids: frozenset[str] = frozenset()  # messages held for a missing schema (not counted)
    held_schemas: frozenset[str] = frozenset()  # the schemas they wait for

    def merge(self, other: BatchOutcome) -> BatchOutcome:
        """Return the sum of two outcomes (counts added, latencies concatenated)."""
        return BatchOutcome(
            events_in=self.events_in + other.events_in,
            good=self.good + other.good,
            bad=self.bad + other.bad,
            failed=self.failed + other.failed,
            types_published=self.types_published + other.types_published,
            duration_s=self.duration_s + other.duration_s,
            bad_by_code=dict(Counter(self.bad_by_code) + Counter(other.bad_by_code)),
            failed_by_reason=dict(Counter(self.failed_by_reason) + Counter(other.failed_by_reason)),
            collector_latency_s=self.collector_latency_s + other.collector_latency_s,
            publish_latency_s=self.publish_latency_s + other.publish_latency_s,
            held_ids=self.held_ids | other.held_ids,
            held_schemas=self.held_schemas | other.held_schemas,
        )

    def without_latencies(self) -> BatchOutcome:
        """Return the counts only (backfill sums millions of rows)."""
        return BatchOutcome(
            self.events_in,
            self.good,
            self.bad,
            self.failed,
            self.types_published,
            self.duration_s,
            self.bad_by_code,
            self.failed_by_reason,
            held_schemas=self.held_schemas,
        )


class PartlyDelivered(TransientError):
    """The insert returned, then a publish failed: ack the durable part, hand back the rest.

    Attributes:
        outcome: the counts of the messages whose outcome is durable.
        not_durable: the message ids whose outcome (failed insert or bad row) was not
            published; only these may be handed back.
    """

    def __init__(self, message: str, outcome: BatchOutcome, not_durable: frozenset[str]) -> None:
        super().__init__(message)
        self.outcome = outcome
        self.not_durable = not_durable


class AccountingError(AssertionError):
    """A batch's outcomes do not add up to its messages: a bug, never bad data."""


def check_accounts(outcome: BatchOutcome) -> None:
    """Raise AccountingError unless every message has exactly one outcome."""
    total = outcome.good + outcome.bad + outcome.failed
    if total != outcome.events_in:
        raise AccountingError(
            f"batch accounting broken: good {outcome.good} + bad {outcome.bad} + failed "
            f"{outcome.failed} = {total}, but {outcome.events_in} events came in"
        )
