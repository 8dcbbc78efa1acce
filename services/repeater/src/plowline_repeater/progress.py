"""A one-line progress bar for a terminal, silent everywhere else.

Notes:
    Drawn with ``\\r`` on one line, ASCII only, at most every ``every`` seconds (and at the
    end), and wiped by ``close`` so that what is printed next starts on a clean line.
    When the stream is not a terminal (a pipe, a file, CI) nothing is written at all.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TextIO


class ProgressBar:
    """Show ``label [#####-----] done/total unit  note`` while work goes on."""

    def __init__(
        self,
        total: int,
        stream: TextIO,
        label: str,
        unit: str = "objects",
        *,
        enabled: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
        every: float = 0.1,
        width: int = 30,
    ) -> None:
        self._total = total
        self._stream = stream
        self._label = label
        self._unit = unit
        self._enabled = _is_terminal(stream) if enabled is None else enabled
        self._clock = clock
        self._every = every
        self._width = width
        self._done = 0
        self._drawn_at: float | None = None
        self._drawn = 0

    def advance(self, steps: int = 1, note: str = "") -> None:
        """Count ``steps`` more done and redraw when due."""
        self._done = min(self._total, self._done + steps)
        now = self._clock()
        due = self._drawn_at is None or now - self._drawn_at >= self._every
        if self._enabled and (due or self._done == self._total):
            self._draw(note)
            self._drawn_at = now

    def close(self) -> None:
        """Wipe the bar off its line."""
        if self._enabled and self._drawn:
            self._stream.write("\r" + " " * self._drawn + "\r")
            self._stream.flush()
            self._drawn = 0

    def render(self, note: str = "") -> str:
        """Return the bar's text as it stands."""
        filled = self._width * self._done // self._total if self._total else self._width
        bar = "#" * filled + "-" * (self._width - filled)
        text = f"{self._label} [{bar}] {self._done}/{self._total} {self._unit}"
        return f"{text}  {note}" if note else text

    def _draw(self, note: str) -> None:
        text = self.render(note)
        padding = " " * max(0, self._drawn - len(text))  # erase a longer previous line
        self._stream.write("\r" + text + padding)
        self._stream.flush()
        self._drawn = len(text)


def _is_terminal(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())
