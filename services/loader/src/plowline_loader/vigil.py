"""The driver's vigil: wait on the streaming query until SIGTERM, its failure, or a stall.

A loader must never sit alive and idle while it holds work: a micro-batch that never ends
(a Python worker hung mid-batch, a task that waits for ever) keeps its leases extended,
so Pub/Sub never hands those messages to anyone else, and before this the process only
ended when Kubernetes' liveness probe (``/healthz``) saw the stall. A plain run, a
systemd unit or the chaos harness has no such probe. So the driver watches the same
``ProgressWatch`` itself and ends the process with a log naming the cause: the
orchestrator restarts it, and the messages of the hung batch come back to the new one
once its leases lapse (nothing of that batch was acked).

Notes:
    Stopping a stalled loader may hang as well (the query's stop waits for the batch in
    flight), so the caller arms a hard exit (:func:`arm_hard_exit`) before it cleans up.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Protocol

import structlog
from plowline_cloud.liveness import Ending, ProgressWatch, keep_consuming

__all__ = ["Ending", "arm_hard_exit", "keep_vigil"]

_log = structlog.get_logger("plowline.loader")


class Query(Protocol):
    """What the vigil needs of a ``StreamingQuery``."""

    def awaitTermination(self, timeout: int) -> bool | None:  # noqa: N802 - Spark's name
        """Wait at most ``timeout`` seconds; say whether the query ended."""
        ...

    def exception(self) -> object:
        """Return why the query ended (None if it was stopped)."""
        ...


class _QueryStream:
    """A streaming query seen as a consumer's stream: each look waits up to ``poll_s``."""

    def __init__(self, query: Query, poll_s: int) -> None:
        self._query = query
        self._poll_s = poll_s

    def ended(self) -> str | None:
        """Return why the query ended, or None if it still runs after ``poll_s`` seconds."""
        if not self._query.awaitTermination(self._poll_s):
            return None
        return f"streaming query ended: {self._query.exception()}"


def keep_vigil(
    query: Query, stop: threading.Event, watch: ProgressWatch, poll_s: int = 1
) -> Ending:
    """Wait until ``stop`` is set, the query ends, or its work stalls; say which.

    The consumers' rule (``plowline_cloud.liveness.keep_consuming``): the query's end
    makes ``/healthz`` answer 503 and ends the process with ``EXIT_UNAVAILABLE`` (1). A
    stall (a micro-batch held longer than the stall timeout without going through)
    ends it the same way.
    """
    return keep_consuming(
        _QueryStream(query, poll_s), watch, stop, lambda: None, name="loader", end_on_stall=True
    )


def arm_hard_exit(
    code: int, after_s: float, exit_now: Callable[[int], object] = os._exit
) -> threading.Timer:
    """Start a timer that ends the process with ``code`` after ``after_s`` seconds.

    Notes:
        For a stalled loader only: its clean-up (finish the batch in flight, stop the
        query and Spark) may wait on the very thing that hangs.
    """

    def fire() -> None:
        _log.error("clean stop took too long: exiting now", after_s=after_s, code=code)
        exit_now(code)

    timer = threading.Timer(after_s, fire)
    timer.daemon = True
    timer.start()
    return timer
