"""The seeded draws of a stand-in's faults, and the count of those that struck, read from its log."""

from __future__ import annotations

import random
import sys
import threading
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

from plowline_devstack.faults.catalogue import Params

STRUCK_MARK = "plowline-fault-struck"
"""The line a stand-in writes to stderr each time a fault strikes (see ``struck_faults``)."""


def struck_faults(logs: Path) -> Counter[str]:
    """Count the faults that struck, per ``<stand-in>.<fault>``, from a stack's server logs.

    Notes:
        ``logs`` is the stack's ``logs/`` folder, one ``<server>.log`` per stand-in; a fault
        whose outage refuses further calls counts once, when it strikes.
    """
    struck: Counter[str] = Counter()
    for log in sorted(logs.glob("*.log")):
        with log.open("rb") as lines:
            for line in lines:
                if line.startswith(STRUCK_MARK.encode()):
                    name = line[len(STRUCK_MARK) + 1 :].decode(errors="replace").strip()
                    struck[f"{log.stem}.{name}"] += 1
    return struck


class FaultDraws:
    """The seeded draws of one stand-in's faults: each fault its own generator and rate.

    Notes:
        Thread-safe (a stand-in serves several threads); the same seed and the same sequence
        of calls strike the same calls. A fault the plan leaves out never strikes.
    """

    def __init__(self, plan: Mapping[str, Params] | None = None, seed: int = 0) -> None:
        plan = plan or {}
        self.plan = dict(plan)
        self.names = tuple(sorted(plan))
        self._rates = {name: float(params.get("rate", 0.0)) for name, params in plan.items()}
        self._draws = {name: random.Random(f"{seed}:{name}") for name in plan}
        self._lock = threading.Lock()

    def draw(self, name: str) -> bool:
        """Return True when fault ``name`` strikes this call (and say so on stderr).

        Notes:
            A strike writes ``STRUCK_MARK name`` to stderr, which the stack sends to the
            stand-in's log: ``struck_faults`` counts them (the chaos report's figures).
        """
        rate = self._rates.get(name, 0.0)
        if rate <= 0.0:
            return False
        with self._lock:
            struck = self._draws[name].random() < rate
        if struck:
            sys.stderr.write(f"{STRUCK_MARK} {name}\n")
            sys.stderr.flush()
        return struck

    def coin(self, name: str) -> bool:
        """Return a fair coin from fault ``name``'s generator (which of two real answers)."""
        with self._lock:
            return self._draws[name].random() < 0.5
