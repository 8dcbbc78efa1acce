"""``plowline-mutator listen``: consume the types subscription and add the columns it names.

Both payload forms are read (the plain JSON array and the self-describing
``shredded_type`` form). A message is acked only after its columns exist. A malformed
message is logged and ACKED, because it can never succeed; an unknown schema is logged
with its key and acked (the loader sends the type again); a failing registry or BigQuery
gets the message nacked for redelivery (see ``plowline_mutator.listener``). When the
streaming pull ends for good (subscription deleted, permission or credentials refused),
the command exits 1 so that it is restarted (``plowline_cloud.liveness``).
"""

from __future__ import annotations

import argparse
import signal
import threading
from types import FrameType

import structlog
from plowline_cloud.liveness import keep_consuming

from plowline_mutator.bootstrap import Runtime, build_runtime
from plowline_mutator.options import Subparsers, add_config, run_job
from plowline_mutator.settings import MutatorSettings

_log = structlog.get_logger("plowline.mutator.listen")
_STOP_TIMEOUT = 30.0
_TICK_SECONDS = 0.5


def register(subparsers: Subparsers) -> None:
    """Add the ``listen`` subcommand to the CLI."""
    parser = subparsers.add_parser(
        "listen", help="add the columns of the types the loader publishes", description=__doc__
    )
    add_config(parser)
    parser.add_argument(
        "--verbose",
        action="store_true",
        default=None,
        help="log every message's types (and debug logs)",
    )
    parser.set_defaults(handler=lambda args: run_job(_listen, args))


class ListenerRun:
    """A running listener over a runtime: ``start``, then ``stop`` (or ``wait`` for a failure)."""

    def __init__(self, runtime: Runtime) -> None:
        self._listener = runtime.listener()
        self._subscriber = runtime.subscriber()
        self._subscription = runtime.table.types_subscription
        self._watch = runtime.watch

    @property
    def running(self) -> bool:
        """Say whether the streaming pull is open."""
        return self._subscriber.running

    def start(self) -> None:
        """Open the streaming pull on the types subscription."""
        self._subscriber.start(self._listener)
        _log.info("listening", subscription=self._subscription)

    def ended(self) -> str | None:
        """Return why the streaming pull ended for good, or None while it runs."""
        return self._subscriber.ended()

    def wait(self, stop: threading.Event) -> int:
        """Block until ``stop`` is set (0) or the stream ends (1, ``/healthz`` then 503).

        Notes:
            The rule of every plowline consumer (``plowline_cloud.liveness.keep_consuming``).
        """
        ending = keep_consuming(
            self, self._watch, stop, lambda: stop.wait(_TICK_SECONDS), name="mutator listener"
        )
        return ending.code

    def stop(self) -> None:
        """Cut retry pauses short, let in-flight messages finish, close the stream."""
        self._listener.stop()
        self._subscriber.stop(_STOP_TIMEOUT)


def _listen(settings: MutatorSettings, args: argparse.Namespace) -> int:
    runtime = build_runtime(settings)
    run = ListenerRun(runtime)
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        run.start()
        return run.wait(stop)
    finally:
        run.stop()
        runtime.close()
