"""``plowline-mutator serve``: the HTTP API (and, unless ``--no-listen``, the types listener).

Every route but the probes (/healthz, /readyz, /metrics) needs ``Authorization: Bearer
<token>``; the token comes from ``PLOWLINE_MUTATOR_TOKEN`` or ``--token-file``. Without
one, serve refuses to start unless ``--insecure-no-auth`` is given. ``--open-read-access``
lets anyone GET (list and preview columns, the API document). Request bodies over
``--max-body-bytes`` (default 65536) are refused with 413 before they are read. When the
types listener's streaming pull ends for good (subscription deleted, permission or
credentials refused), ``/healthz`` answers 503 and serve exits 1 so that it is restarted.
"""

from __future__ import annotations

import argparse
import threading
from pathlib import Path
from types import FrameType
from typing import Any

import structlog
import uvicorn
from plowline_cloud.chassis import EXIT_OK
from plowline_cloud.liveness import register_watch_metrics

from plowline_mutator.api import ApiContext, create_app
from plowline_mutator.bootstrap import build_runtime
from plowline_mutator.listen import ListenerRun
from plowline_mutator.options import Subparsers, add_config, add_listener_flags, run_job
from plowline_mutator.settings import MutatorSettings

_log = structlog.get_logger("plowline.mutator.serve")


def register(subparsers: Subparsers) -> None:
    """Add the ``serve`` subcommand to the CLI."""
    parser = subparsers.add_parser(
        "serve", help="serve the HTTP API (and listen for types)", description=__doc__
    )
    add_config(parser)
    parser.add_argument("--host", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port to bind (default 8080)")
    parser.add_argument(
        "--no-listen",
        dest="no_listen",
        action="store_true",
        help="serve the API only; do not consume the types subscription",
    )
    parser.add_argument(
        "--token-file",
        type=Path,
        metavar="FILE",
        help="file holding the API token (else PLOWLINE_MUTATOR_TOKEN)",
    )
    parser.add_argument(
        "--insecure-no-auth",
        action="store_true",
        default=None,
        help="serve without authentication (local development only)",
    )
    parser.add_argument(
        "--open-read-access",
        action="store_true",
        default=None,
        help="let anyone GET without the token: list and preview columns, /openapi.json, "
        "/docs (adding columns still needs it)",
    )
    parser.add_argument(
        "--max-body-bytes",
        type=int,
        metavar="N",
        help="refuse request bodies over N bytes with 413 (default 65536; "
        "or PLOWLINE_MUTATOR_MAX_BODY_BYTES)",
    )
    add_listener_flags(parser)
    parser.set_defaults(handler=lambda args: run_job(_serve, args))


class _GracefulServer(uvicorn.Server):
    """A uvicorn server whose graceful stop on SIGTERM/SIGINT lets the command exit 0.

    Notes:
        uvicorn records the signal and raises it again once it has shut down, so the
        process would end by the signal; serve stops the listener, closes its clients
        and exits 0 instead, as every plowline service does after a graceful stop.
    """

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        """Shut down gracefully without re-raising the signal afterwards."""
        super().handle_exit(sig, frame)
        self._captured_signals.clear()


def _serve(settings: MutatorSettings, args: argparse.Namespace) -> int:
    settings.require_auth()
    if settings.token is None:
        _log.warning("serving WITHOUT authentication (--insecure-no-auth)")
    runtime = build_runtime(settings)
    listener = None if args.no_listen else ListenerRun(runtime)

    def ready() -> bool:
        return listener is None or listener.running

    def registries() -> list[dict[str, Any]]:
        return [outage.to_json() for outage in runtime.resolver.outages.current()]

    register_watch_metrics(runtime.metrics.registry, "mutator", runtime.watch, ready)
    context = ApiContext(
        runtime.mutator,
        runtime.schema_store,
        runtime.metrics,
        settings.token,
        ready,
        registries,
        liveness=runtime.watch.details,
        open_reads=settings.open_read_access,
        max_body_bytes=settings.max_body_bytes,
    )
    config = uvicorn.Config(
        create_app(context), host=settings.host, port=settings.port, log_config=None
    )
    server = _GracefulServer(config)
    stop = threading.Event()
    code = [EXIT_OK]
    vigil = None
    try:
        if listener is not None:
            listener.start()
            vigil = _keep_vigil(listener, server, stop, code)
        server.run()  # returns on SIGINT/SIGTERM, or once the listener's stream has ended
    finally:
        stop.set()
        if vigil is not None:
            vigil.join()
        if listener is not None:
            listener.stop()
        runtime.close()
    return code[0]


def _keep_vigil(
    listener: ListenerRun, server: uvicorn.Server, stop: threading.Event, code: list[int]
) -> threading.Thread:
    """Watch the listener beside the server: once its stream ends, stop serving (exit 1).

    Notes:
        The rule of every plowline consumer (``plowline_cloud.liveness.keep_consuming``):
        ``/healthz`` answers 503 from the moment the stream ends, and the command exits
        non-zero so that it is restarted, since no column would ever be added again.
    """

    def watch() -> None:
        ending = listener.wait(stop)
        if ending != EXIT_OK:
            code[0] = ending
            server.should_exit = True

    thread = threading.Thread(target=watch, name="mutator-listener-vigil", daemon=True)
    thread.start()
    return thread
