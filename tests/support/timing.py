"""Time in tests: a clock moved by hand, and the one way a test waits for something.

Every wait in the suite is ``wait_for`` (or ``wait_for_line`` for a log): a test never sleeps
longer than the thing it waits for takes. ``wait_for`` checks at once, then polls with a
backoff from 10 ms up to ``every_s`` (0.2 s unless the check is dear, e.g. a BigQuery query),
so a condition met in 30 ms is seen in about 30 ms. Where the thing waited for can say when
it changed (a webhook receiver, a recorder), it notifies a ``threading.Condition`` and
``wait_for(..., wake=condition)`` checks again the moment it is notified.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

_FIRST_POLL_S = 0.01


class ManualClock:
    """A monotonic clock the test moves by hand (``now``, or ``advance``)."""

    def __init__(self, start: float = 0.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        """Move the clock on by ``seconds``."""
        self.now += seconds


def wait_until(
    check: Callable[[], T],
    timeout_s: float = 120.0,
    *,
    every_s: float = 0.2,
    wake: threading.Condition | None = None,
) -> T:
    """Check until ``check()`` is truthy or ``timeout_s`` passed; return its last answer.

    Args:
        check: what to wait for; checked at once, then after each pause.
        timeout_s: how long to wait at most.
        every_s: the longest pause between two checks (pauses start at 10 ms and double).
        wake: a condition the thing waited for notifies when it changed: a notification
            ends the pause at once.
    """
    deadline = time.monotonic() + timeout_s
    pause = _FIRST_POLL_S
    while True:
        answer = check()
        left = deadline - time.monotonic()
        if answer or left <= 0:
            return answer
        if wake is None:
            time.sleep(min(pause, left))
        else:
            with wake:
                wake.wait(min(pause, left))
        pause = min(pause * 2, every_s)


def wait_for(
    check: Callable[[], object],
    timeout_s: float = 120.0,
    *,
    every_s: float = 0.2,
    wake: threading.Condition | None = None,
) -> bool:
    """Return whether ``check()`` became truthy within ``timeout_s`` (see ``wait_until``)."""
    return bool(wait_until(check, timeout_s, every_s=every_s, wake=wake))


def wait_for_line(path: Path, text: str, timeout_s: float = 120.0) -> bool:
    """Return whether a line holding ``text`` was written to ``path`` within ``timeout_s``.

    Reads only what was appended since the last look (a log can grow large), so the check
    is cheap enough to run every few milliseconds.
    """
    seen = b""
    offset = 0
    needle = text.encode()

    def appeared() -> bool:
        nonlocal seen, offset
        try:
            with path.open("rb") as log:
                log.seek(offset)
                chunk = log.read()
        except FileNotFoundError:
            return False
        offset += len(chunk)
        seen = seen[-len(needle) :] + chunk if needle else chunk
        return needle in seen

    return wait_for(appeared, timeout_s, every_s=0.05)
