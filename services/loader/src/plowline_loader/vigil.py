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
from dataclasses import dataclass
from typing import Protocol

import structlog
from plowline_cloud.liveness import ProgressWatch

from plowline_loader.cli import EXIT_OK, EXIT_UNAVAILABLE

_log = structlog.get_logger("plowline.loader")


class Query(Protocol):
    """What the vigil needs of a ``StreamingQuery``."""

    def awaitTermination(self, timeout: int) -> bool | None:  # noqa: N802 - Spark's name
        """Wait at most ``timeout`` seconds; say whether the query ended."""
        ...

    def exception(self) -> object:
        """Return why the query ended (None if it was stopped)."""
        ...


@dataclass(frozen=True, slots=True)
class Ending:
    """Why the vigil ended: the exit code and, unless stopped on request, the cause."""

    code: int
    cause: str | None = None


def keep_vigil(
    query: Query, stop: threading.Event, watch: ProgressWatch, poll_s: int = 1
) -> Ending:
    """Wait until ``stop`` is set, the query ends, or its work stalls; say which.

    A stall is the watch's: a micro-batch held longer than the stall timeout without
    going through. It ends the process as the query's own failure does
    (``EXIT_UNAVAILABLE``).
    """
    while not stop.is_set():
        if query.awaitTermination(poll_s):
            error = str(query.exception())
            _log.error("streaming query ended", error=error)
            return Ending(EXIT_UNAVAILABLE, f"streaming query ended: {error}")
        if not watch.alive():
            details = watch.details()
            cause = (
                f"stalled: a micro-batch has held {details['held']} unit(s) of work for "
                f"{details['secondsWithoutProgress']:.0f} s without going through "
                f"(--stall-timeout {watch.stall_timeout_s:g} s)"
            )
            _log.error(
                "loader stalled: exiting so that it is restarted; the batch's messages "
                "come back once their leases lapse",
                cause=cause,
            )
            return Ending(EXIT_UNAVAILABLE, cause)
    return Ending(EXIT_OK)


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
