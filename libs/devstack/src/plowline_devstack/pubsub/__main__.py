"""Command line: ``python -m plowline_devstack.pubsub --host H --port P [--data-dir DIR] [--faults FILE]``."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from pathlib import Path

import structlog
from plowline_core.errors import ConfigError

from plowline_devstack.faults.plan import load_faults
from plowline_devstack.faults.pubsub import PubSubFaults
from plowline_devstack.pubsub.server import PubSubEmulator

_LEVELS = ("debug", "info", "warning", "error")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m plowline_devstack.pubsub",
        description=(
            "plowline's Pub/Sub emulator: serves google.pubsub.v1 Publisher and Subscriber "
            "over insecure gRPC for the unmodified google-cloud-pubsub client. Point clients at "
            "it with PUBSUB_EMULATOR_HOST=HOST:PORT (no scheme). Runs until SIGTERM or SIGINT, "
            "then stops gracefully."
        ),
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default: %(default)s)"
    )
    parser.add_argument(
        "--port",
        type=int,
        default=8085,
        help="port to bind; 0 picks a free one (default: %(default)s)",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="persist topics, subscriptions and unacked messages in DIR/pubsub.sqlite3 "
        "(default: in memory only)",
    )
    parser.add_argument(
        "--faults",
        type=Path,
        default=None,
        metavar="FILE",
        help="fault file (TOML or JSON) whose [pubsub] faults this emulator injects, e.g. "
        "duplicate-delivery or streaming-pull-unavailable; format and catalogue in "
        "plowline_devstack.faults.plan (default: no faults)",
    )
    parser.add_argument(
        "--log-level", choices=_LEVELS, default="info", help="log threshold (default: %(default)s)"
    )
    return parser


def _configure_logging(level: str) -> None:
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.JSONRenderer(),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(getattr(logging, level.upper())),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )


def main(argv: list[str] | None = None) -> int:
    """Serve until SIGTERM or SIGINT; return the exit status."""
    args = _parser().parse_args(argv)
    _configure_logging(args.log_level)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    try:
        plan = load_faults(args.faults)
    except ConfigError as error:
        print(f"python -m plowline_devstack.pubsub: {error}", file=sys.stderr)
        return 2
    faults = PubSubFaults(plan.for_server("pubsub"), plan.seed)
    emulator = PubSubEmulator(args.host, args.port, data_dir=args.data_dir, faults=faults)
    try:
        emulator.start()
    except OSError as error:
        structlog.get_logger("plowline.pubsub").error(
            "pubsub_emulator_bind_failed", error=str(error)
        )
        return 1
    while not stop.wait(1.0):
        pass
    emulator.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
