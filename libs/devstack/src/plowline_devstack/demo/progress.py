"""The demo's progress display: one look at the systems a second until every event is placed.

:class:`Progress` is one look (published, rows, bad rows, failed inserts, columns added,
dead-ended); :func:`watch` repeats it while a publisher thread runs and after, rewriting
one line on a terminal and printing a line every five seconds otherwise.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO

_EVERY_S = 1.0
_LOG_EVERY_S = 5.0


@dataclass(frozen=True, slots=True)
class Progress:
    """One look at the systems while events flow."""

    published: int
    rows: int
    distinct_rows: int
    bad_rows: int
    dead_ended: int
    failed_inserts: float | None
    columns_added: int

    @property
    def accounted(self) -> int:
        """Events found somewhere: distinct rows, bad rows and dead-ended rows."""
        return self.distinct_rows + self.bad_rows + self.dead_ended

    def line(self, total: int, elapsed: float) -> str:
        """Return the progress as one line."""
        failed = "?" if self.failed_inserts is None else f"{self.failed_inserts:.0f}"
        return (
            f"[{elapsed:5.1f} s] published {self.published}/{total}  rows {self.distinct_rows}"
            f"  bad rows {self.bad_rows}  failed inserts {failed}"
            f"  columns added {self.columns_added}  dead-ended {self.dead_ended}"
        )


def watch(
    look: Callable[[int], Progress],
    total: int,
    publisher: threading.Thread,
    sent: list[int],
    timeout: float,
    began: float,
    out: TextIO | None = None,
) -> bool:
    """Show progress until ``total`` events are accounted for, or ``timeout`` after publishing.

    ``look(published)`` takes one look; ``sent[0]`` is kept up to date by ``publisher``.
    Return True when every event was accounted for.
    """
    out = out or sys.stderr
    tty = out.isatty()
    deadline: float | None = None
    last_line = 0.0
    while True:
        progress = look(sent[0])
        now = time.monotonic()
        text = progress.line(total, now - began)
        if tty:
            print(f"\r{text}\033[K", end="", file=out, flush=True)
        elif now - last_line >= _LOG_EVERY_S:
            print(text, file=out, flush=True)
            last_line = now
        if not publisher.is_alive():
            deadline = deadline or now + timeout
            if progress.accounted >= total:
                _finish(out, tty, text)
                return True
            if now > deadline:
                _finish(out, tty, text)
                print(f"timed out {timeout:.0f} s after publishing", file=out)
                return False
        time.sleep(_EVERY_S)


def _finish(out: TextIO, tty: bool, text: str) -> None:
    print("" if tty else text, file=out, flush=True)
