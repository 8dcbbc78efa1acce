"""Which Iglu repositories cannot answer right now, since when, and what they last said.

The resolver keeps one ``OutageLedger``: a repository's outage starts at its first failed
lookup (timeout, 5xx, a 403 that is not "not found" for it…) and ends at its next answer,
schema or "not found". Services show the ledger in ``/readyz`` and log its transitions
(``OutageListener``): one line when an outage starts and one when it ends, never one per
event or per retry.

Notes:
    Pure: the time is passed in. Safe to share between threads (one lock around the dict):
    the resolver runs on many request or task threads at once.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from plowline_core.ports import OutageListener


@dataclass(frozen=True, slots=True)
class RegistryOutage:
    """One repository that cannot answer: since when, how often, and its last error."""

    repository: str
    since: datetime
    last_failure: datetime
    last_error: str
    failures: int = 1

    def to_json(self) -> dict[str, Any]:
        """Return the outage as ``/readyz`` shows it."""
        return {
            "repository": self.repository,
            "since": _iso(self.since),
            "lastFailure": _iso(self.last_failure),
            "lastError": self.last_error,
            "failures": self.failures,
        }

    def merge(self, other: RegistryOutage) -> RegistryOutage:
        """Return the outage seen by two observers (earliest start, latest error, summed)."""
        latest = other if other.last_failure >= self.last_failure else self
        return replace(
            latest,
            since=min(self.since, other.since),
            failures=self.failures + other.failures,
        )


class OutageLedger:
    """The repositories in an outage now; tells an optional listener of every transition."""

    def __init__(self, listener: OutageListener | None = None) -> None:
        self._listener = listener
        self._outages: dict[str, RegistryOutage] = {}
        self._lock = threading.Lock()

    def failed(self, repository: str, error: str, now: datetime) -> RegistryOutage:
        """Record a failed lookup; return the repository's outage (new or longer)."""
        with self._lock:
            known = self._outages.get(repository)
            if known is None:
                outage = RegistryOutage(repository, now, now, error)
            else:
                outage = replace(
                    known, last_failure=now, last_error=error, failures=known.failures + 1
                )
            self._outages[repository] = outage
        if known is None and self._listener is not None:
            self._listener.outage_started(outage)
        return outage

    def answered(self, repository: str, now: datetime) -> None:
        """Record an answer (schema or not found): the repository's outage, if any, ends."""
        if repository not in self._outages:  # the common case, without the lock
            return
        with self._lock:
            ended = self._outages.pop(repository, None)
        if ended is not None and self._listener is not None:
            self._listener.outage_ended(ended, now)

    def current(self) -> tuple[RegistryOutage, ...]:
        """Return the outages going on, oldest first."""
        with self._lock:
            outages = list(self._outages.values())
        return tuple(sorted(outages, key=lambda outage: (outage.since, outage.repository)))


def _iso(moment: datetime) -> str:
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return moment.isoformat(timespec="milliseconds") + "Z"
