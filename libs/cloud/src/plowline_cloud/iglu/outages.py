"""Log Iglu registry outages as they start and end: two structured lines per outage.

Notes:
    Satisfies ``plowline_core.ports.OutageListener``. While an outage lasts, nothing
    is logged per event or per lookup; the services' own retry loops say what they hold
    back, and ``/readyz`` shows the ledger.
"""

from __future__ import annotations

from datetime import datetime

import structlog
from plowline_core.iglu.outage import RegistryOutage

_log = structlog.get_logger("plowline.iglu")


class LoggedOutages:
    """An ``OutageListener`` that logs each transition once, with the registry's name."""

    def outage_started(self, outage: RegistryOutage) -> None:
        """Log that a registry stopped answering; lookups that need it are held back."""
        _log.warning(
            "iglu registry unavailable: events needing it are held back",
            registry=outage.repository,
            since=outage.since.isoformat(),
            error=outage.last_error,
        )

    def outage_ended(self, outage: RegistryOutage, now: datetime) -> None:
        """Log that a registry answers again, with how long and how often it failed."""
        _log.info(
            "iglu registry answers again",
            registry=outage.repository,
            outage_s=round((now - outage.since).total_seconds(), 3),
            failures=outage.failures,
            last_error=outage.last_error,
        )
