"""The real clock."""

from __future__ import annotations

from datetime import UTC, datetime


class SystemClock:
    """Satisfy ``Clock`` with the system's UTC time."""

    def now(self) -> datetime:
        """Return the current UTC time (timezone-aware)."""
        return datetime.now(UTC)
