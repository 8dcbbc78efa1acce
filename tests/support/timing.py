"""Time in tests: a clock moved by hand, and waiting for a condition with a deadline."""

from __future__ import annotations

import time
from collections.abc import Callable


class ManualClock:
    """A monotonic clock the test moves by hand (``now``, or ``advance``)."""

    def __init__(self, start: float = 0.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        """Move the clock on by ``seconds``."""
        self.now += seconds


def wait_for(check: Callable[[], bool], timeout_s: float = 120.0) -> bool:
    """Poll ``check`` every 0.2 s; return whether it held before ``timeout_s`` passed."""
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True
