"""Decide when buffered bad rows become an object: per key, per time window, per row count.

Notes:
    Pure: time comes in as ``now`` from an injected clock. Windows are aligned on multiples
    of ``window`` seconds since the epoch, so every instance names objects alike. A buffer
    is flushed when its window has closed (``due``) or when it holds ``max_rows`` items
    (``add``); a later buffer of the same key and window simply gets another object.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Batch(Generic[T]):
    """Items of one key and window to write as one object."""

    key: str
    window_start: datetime
    items: tuple[T, ...]


@dataclass(slots=True)
class _Buffer(Generic[T]):
    window_start: datetime
    items: list[T] = field(default_factory=list)


def window_start(now: datetime, window: float) -> datetime:
    """Return the start of the aligned window holding ``now`` (UTC)."""
    seconds = now.timestamp()
    start = seconds - (seconds % window)
    return datetime.fromtimestamp(start, UTC)


class Batcher(Generic[T]):
    """Buffer items per key and hand out the batches that are ready to write."""

    def __init__(self, window: float, max_rows: int) -> None:
        if window <= 0 or max_rows <= 0:
            raise ValueError(f"window and max_rows must be positive, got {window}, {max_rows}")
        self._window = window
        self._span = timedelta(seconds=window)
        self._max_rows = max_rows
        self._buffers: dict[str, _Buffer[T]] = {}

    @property
    def pending(self) -> int:
        """Return how many items are buffered."""
        return sum(len(buffer.items) for buffer in self._buffers.values())

    def add(self, key: str, item: T, now: datetime) -> list[Batch[T]]:
        """Buffer ``item`` under ``key``; return batches this closed (expired window, full buffer)."""
        ready: list[Batch[T]] = []
        buffer = self._buffers.get(key)
        if buffer is not None and self._closed(buffer, now):
            ready.append(self._take(key))
            buffer = None
        if buffer is None:
            buffer = self._buffers[key] = _Buffer(window_start(now, self._window))
        buffer.items.append(item)
        if len(buffer.items) >= self._max_rows:
            ready.append(self._take(key))
        return ready

    def due(self, now: datetime) -> list[Batch[T]]:
        """Return (and forget) the batches whose window has closed by ``now``."""
        closed = [key for key, buffer in self._buffers.items() if self._closed(buffer, now)]
        return [self._take(key) for key in closed]

    def drain(self) -> list[Batch[T]]:
        """Return (and forget) every buffered batch, closed or not (shutdown)."""
        return [self._take(key) for key in list(self._buffers)]

    def _closed(self, buffer: _Buffer[T], now: datetime) -> bool:
        return now >= buffer.window_start + self._span

    def _take(self, key: str) -> Batch[T]:
        buffer = self._buffers.pop(key)
        return Batch(key, buffer.window_start, tuple(buffer.items))
