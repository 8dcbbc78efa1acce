"""One value per key and per process, built on first use: ``PerProcess``.

Notes:
    For what is neither picklable nor cheap (a gRPC client, the loader's batch processor):
    each Python process (the loader's reader process, each Spark Python worker) builds its
    own on first use and keeps it. A forked child builds its own again, since gRPC channels
    do not survive a fork: the value is keyed by the process id too. Safe to call from
    many threads (one lock; a value is built once).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

_K = TypeVar("_K", bound=Hashable)
_V = TypeVar("_V")


class PerProcess(Generic[_K, _V]):
    """Return this process's value for a key, made by ``build`` on first use."""

    def __init__(self, build: Callable[[_K], _V]) -> None:
        self._build = build
        self._values: dict[_K, tuple[int, _V]] = {}
        self._lock = threading.Lock()

    def __call__(self, key: _K) -> _V:
        """Return the value for ``key`` built in this process, building it now if none was."""
        pid = os.getpid()
        with self._lock:
            cached = self._values.get(key)
            if cached is not None and cached[0] == pid:
                return cached[1]
            value = self._build(key)
            self._values[key] = (pid, value)
            return value
