"""``plowline-mutator listen``: consume the types subscription and add the columns it names.

Both payload forms are read (the plain JSON array and the self-describing
``shredded_type`` form). A message is acked only after its columns exist. A malformed
message is logged and ACKED, because it can never succeed; an unknown schema is logged
with its key and acked (the loader sends the type again); a failing registry or BigQuery
gets the message nacked for redelivery (see ``plowline_mutator.listener``). When the
streaming pull ends for good (subscription deleted, permission or credentials refused),
the command exits 1 so that it is restarted (``plowline_cloud.liveness``).

It serves ``/healthz`` (alive: the stream runs and held messages get settled within
``--stall-timeout``), ``/readyz`` (the streaming pull is open) and ``/metrics`` on
``--port``, by default 8084 (``serve`` keeps 8080, where its API answers them too).
"""

from __future__ import annotations

import argparse
import threading

import structlog
from plowline_cloud.chassis import stop_on_signals
from plowline_cloud.liveness import keep_consuming, serve_probes

from plowline_mutator.bootstrap import Runtime, build_runtime
from plowline_mutator.options import Subparsers, add_config, add_listener_flags, run_job
from plowline_mutator.settings import MutatorSettings

_log = structlog.get_logger("plowline.mutator.listen")
_STOP_TIMEOUT = 30.0
_TICK_SECONDS = 0.5
LISTEN_PORT = 8084
"""``listen``'s health and metrics port unless ``--port`` or PLOWLINE_MUTATOR_PORT says."""


def register(subparsers: Subparsers) -> None:
    """Add the ``listen`` subcommand to the CLI."""
    parser = subparsers.add_parser(
        "listen", help="add the columns of the types the loader publishes", description=__doc__
    )
    add_config(parser)
    parser.add_argument(
        "--port",
        type=int,
        help=f"health and metrics port (default {LISTEN_PORT}, 0 = any; or PLOWLINE_MUTATOR_PORT)",
    )
    add_listener_flags(parser)
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

    def ready(self) -> bool:
        """Answer ``/readyz``: the streaming pull is open."""
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


def listen_port(settings: MutatorSettings) -> int:
    """Return the port ``listen`` serves its probes on: the one set, else :data:`LISTEN_PORT`."""
    return settings.port if "port" in settings.model_fields_set else LISTEN_PORT


def _listen(settings: MutatorSettings, args: argparse.Namespace) -> int:
    runtime = build_runtime(settings)
    run = ListenerRun(runtime)
    stop = stop_on_signals()
    health = serve_probes(
        listen_port(settings), runtime.metrics.registry, "mutator", runtime.watch, run.ready
    )
    _log.info("serving health", port=health.port)
    try:
        run.start()
        return run.wait(stop)
    finally:
        run.stop()
        health.stop()
        runtime.close()
