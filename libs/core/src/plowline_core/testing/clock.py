"""A clock that stands still until a test moves it."""

from __future__ import annotations

from datetime import datetime, timedelta


class FixedClock:
    """Satisfy ``Clock`` with a time that only ``advance`` or ``set`` changes.

    Notes:
        ``now`` must be timezone-aware, as every ``Clock`` returns UTC-aware times.
    """

    def __init__(self, now: datetime) -> None:
        if now.tzinfo is None:
            raise ValueError(f"FixedClock needs a timezone-aware time, got {now!r}")
        self._now = now
        self.reads = 0

    def now(self) -> datetime:
        """Return the current fake time."""
        self.reads += 1
        return self._now

    def advance(self, seconds: float) -> None:
        """Move the time forward (or backward with a negative number)."""
        self._now += timedelta(seconds=seconds)

    def set(self, now: datetime) -> None:
        """Jump to a given (aware) time."""
        if now.tzinfo is None:
            raise ValueError(f"FixedClock needs a timezone-aware time, got {now!r}")
        self._now = now
