"""Keep deliveries leased while a Spark task works on them.

Notes:
    A lease extender is a daemon thread inside the task that processes the messages: every
    ``interval_s`` it moves the ack deadline of every outstanding ack id to now +
    ``deadline_s``. ``interval_s`` must be well below ``deadline_s`` so that one late or
    failed extension does not let a lease lapse. A lapse is never a loss, only a duplicate:
    Pub/Sub redelivers the message and the sink's ``insertId`` bounds the duplicate.
    An extension that fails is logged and retried at the next tick; it never kills the task.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from types import TracebackType
from typing import Protocol

import structlog
from plowline_core.errors import PlowlineError

_log = structlog.get_logger("plowline.loader.source")

MIN_DEADLINE_S, MAX_DEADLINE_S = 10, 600
"""Pub/Sub's range for an ack deadline: what ``--ack-deadline`` and the source's
``ackDeadlineSeconds`` may be (the one statement of the rule both check)."""


class Extendable(Protocol):
    """What a lease needs from a subscription."""

    path: str

    def modack(self, ack_ids: Sequence[str], seconds: int) -> None:
        """Set the ack deadline of ``ack_ids`` to now + ``seconds``."""
        ...


class LeaseExtender:
    """Extend the ack deadline of a fixed set of ack ids until stopped."""

    def __init__(
        self,
        subscription: Extendable,
        ack_ids: Sequence[str],
        *,
        deadline_s: int,
        interval_s: float,
    ) -> None:
        if not 0 < interval_s < deadline_s:
            raise ValueError(f"lease interval {interval_s}s must be in (0, {deadline_s}s)")
        self._subscription = subscription
        self._ack_ids = list(ack_ids)
        self._deadline_s = deadline_s
        self._interval_s = interval_s
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pubsub-lease", daemon=True)
        self.extensions = 0
        self.failures = 0

    def start(self) -> LeaseExtender:
        """Start extending in the background and return self."""
        if self._ack_ids:
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop extending and wait for the thread (at most one RPC in flight)."""
        self._stopped.set()
        if self._thread.is_alive():
            self._thread.join()

    def __enter__(self) -> LeaseExtender:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def _run(self) -> None:
        while not self._stopped.wait(self._interval_s):
            try:
                self._subscription.modack(self._ack_ids, self._deadline_s)
                self.extensions += 1
            except PlowlineError as error:
                self.failures += 1
                _log.warning(
                    "lease_extension_failed",
                    subscription=self._subscription.path,
                    ack_ids=len(self._ack_ids),
                    error=str(error),
                )
