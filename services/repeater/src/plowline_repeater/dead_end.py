"""The dead-end bucket: loader_recovery_error bad rows, buffered and written as NDJSON objects.

Object names (relative to the bucket path)::

    YYYY/MM/DD/HH/<UTC timestamp, ISO basic>-<unique>.ndjson

Notes:
    Pure. A buffer is ready at ``buffer_size`` rows or ``window`` seconds after its first
    row, whichever comes first (Snowplow's repeater: 20 rows / 30 s).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Generic, TypeVar

import orjson
from plowline_core.badrows import RecoveryErrorRow
from plowline_core.messages import FailedInsert, MessageError
from plowline_core.ports import InsertFailure

T = TypeVar("T")


def runtime_error_row(failed: FailedInsert, failure: InsertFailure) -> RecoveryErrorRow:
    """Return the bad row of a failed insert BigQuery kept refusing (RuntimeError)."""
    error = {
        "message": failure.message,
        "location": failure.location,
        "reason": failure.reason.value,
    }
    return RecoveryErrorRow(error, orjson.dumps(failed.row).decode())


def parsing_error_row(data: bytes, error: MessageError) -> RecoveryErrorRow:
    """Return the bad row of a message that is not a failed-insert row (ParsingError)."""
    return RecoveryErrorRow(
        {"message": error.message, "location": []}, data.decode("utf-8", "replace")
    )


def object_name(now: datetime, unique: str) -> str:
    """Return the name of a dead-end object written at ``now`` (UTC)."""
    return f"{now:%Y/%m/%d/%H}/{now:%Y%m%dT%H%M%S}.{now.microsecond // 1000:03d}Z-{unique}.ndjson"


@dataclass(frozen=True, slots=True)
class _Entry(Generic[T]):
    item: T
    line: bytes


class DeadEndBuffer(Generic[T]):
    """Bad-row lines with the items (messages) they settle, until an object is due."""

    def __init__(self, size: int, window: float) -> None:
        self._size = size
        self._window = timedelta(seconds=window)
        self._entries: list[_Entry[T]] = []
        self._opened: datetime | None = None

    def __len__(self) -> int:
        return len(self._entries)

    def add(self, item: T, line: bytes, now: datetime) -> None:
        """Buffer one bad-row line."""
        if not self._entries:
            self._opened = now
        self._entries.append(_Entry(item, line))

    def ready(self, now: datetime) -> bool:
        """Say whether the buffer should be written now."""
        if not self._entries or self._opened is None:
            return False
        return len(self._entries) >= self._size or now >= self._opened + self._window

    def take(self) -> tuple[list[T], bytes]:
        """Return (and forget) the buffered items and the NDJSON object body."""
        entries, self._entries, self._opened = self._entries, [], None
        return [e.item for e in entries], b"".join(e.line + b"\n" for e in entries)
