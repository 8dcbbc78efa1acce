"""The ``plowline-repeater`` console entry: ``run`` (the service) and ``replay`` (by hand).

``run`` is the default, so Snowplow's repeater arguments work unchanged: 0.x
(``--config=$B64 --resolver=$B64 --failedInsertsSub=… --deadEndBucket=gs://…
--desperatesBufferSize=20 --desperatesWindow=20 --backoffPeriod=900``) and 1.x
(``--config=$B64_HOCON --resolver=… --bufferSize=20 --timeout=20 --backoffPeriod=900``,
subscription and bucket read from ``repeater.input`` and ``repeater.output.deadLetters``).

Exit codes: ``plowline_cloud.chassis`` (0 done, 1 a dependency failed, 2 usage).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

from plowline_cloud.chassis import EXIT_USAGE, command_parser, describe_errors, flag_names, guarded
from plowline_cloud.command_line import add_snowplow_inputs, with_default_command
from plowline_cloud.liveness import STALL_TIMEOUT_HELP
from pydantic import ValidationError

_RUN_EPILOG = """\
A failed insert is re-inserted (insertId = event_id) as soon as the table has every column
the row needs, or once backoffPeriod has passed since the failure was first seen (the
failed-inserts message's publish time), whichever comes first. Snowplow counts the backoff
from etl_tstamp instead, which dead-ends old events (backfills, replays, a pipeline catching
up) at their first refusal; plowline gives every failure the whole backoff on purpose. While
it waits its message stays leased (never acked, never redelivered in a loop). A row still
refused after the backoff, or a message that is not a failed-insert row, becomes a
loader_recovery_error bad row in the dead-end bucket:

  <path>/YYYY/MM/DD/HH/<UTC timestamp>-<id>.ndjson      (private objects, NDJSON)

Messages are acked only once their row is in the table or their bad row is written.
Every option can also be set as PLOWLINE_REPEATER_<NAME> (e.g. PLOWLINE_REPEATER_WINDOW=10);
the command line wins. PUBSUB_EMULATOR_HOST, BIGQUERY_EMULATOR_HOST and
STORAGE_EMULATOR_HOST point at local stand-ins. /healthz, /readyz, /metrics on --port.
"""


def build_parser() -> argparse.ArgumentParser:
    """Return the top-level parser with ``run`` and ``replay``."""
    parser, commands = command_parser(
        "plowline-repeater", "Re-insert BigQuery failed inserts once they fit; dead-end the rest."
    )
    _add_run(commands)
    _add_replay(commands)
    return parser


def _add_run(commands: Any) -> None:
    run = commands.add_parser(
        "run",
        help="consume the failed-inserts subscription until SIGTERM",
        description="Re-insert failed inserts from Pub/Sub into the events table.",
        epilog=_RUN_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        argument_default=argparse.SUPPRESS,
    )
    add_snowplow_inputs(
        run,
        config_help="Snowplow config, 0.x bigquery_config JSON, 1.x or 2.x HOCON, a path or base64 "
        "(table)",
        resolver_help="Iglu resolver config, a path or base64",
    )
    run.add_argument(
        "--failedInsertsSub",
        dest="failed_inserts_sub",
        metavar="SUB",
        help="failed-inserts subscription: short name in projectId, or projects/P/subscriptions/S "
        "(default: the 1.x config's repeater.input.subscription; 2.x: projects/P/subscriptions/"
        "plowline-<dataset>-<table>-failed-inserts)",
    )
    run.add_argument(
        "--deadEndBucket",
        dest="dead_end_bucket",
        metavar="gs://BUCKET/PATH",
        help="where rows that can never be inserted are written (must start with gs://; "
        "default: the 1.x config's repeater.output.deadLetters.bucket; 2.x: "
        "gs://<project>-plowline-dead-end)",
    )
    run.add_argument(
        "--backoffPeriod",
        dest="backoff_period",
        type=float,
        metavar="SECONDS",
        help="retry a row regardless this long after its insert first failed, i.e. after the "
        "failed-inserts message was published; Snowplow counts from etl_tstamp (default 900)",
    )
    run.add_argument(
        "--bufferSize",
        "--desperatesBufferSize",
        dest="buffer_size",
        type=int,
        metavar="N",
        help="dead-end rows per object (default 20)",
    )
    run.add_argument(
        "--window",
        "--desperatesWindow",
        "--timeout",
        dest="window",
        type=float,
        metavar="SECONDS",
        help="write a partial dead-end object after this long (default 30)",
    )
    run.add_argument("--verbose", action="store_true", help="log every decision (DEBUG)")
    run.add_argument("--port", type=int, help="health and metrics port (default 8082, 0 = any)")
    run.add_argument(
        "--maxOutstanding",
        dest="max_outstanding",
        type=int,
        metavar="N",
        help="most failed inserts held at once (flow control, default 1000)",
    )
    run.add_argument(
        "--stallTimeout",
        dest="stall_timeout",
        type=float,
        metavar="SECONDS",
        help=f"{STALL_TIMEOUT_HELP} (default: the longer of 1800 and --backoffPeriod + --window + 300)",
    )
    run.add_argument(
        "--startupTimeout",
        dest="startup_timeout",
        type=float,
        metavar="SECONDS",
        help="give up starting (exit 1, naming the call) when a start-up call, such as "
        "the exactly-once ledger's check, goes unanswered this long (default 60)",
    )
    run.set_defaults(handler=_run)


def _add_replay(commands: Any) -> None:
    from plowline_repeater.replay_command import register

    register(commands)


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the arguments, run the chosen command, and return its exit code."""
    parser = build_parser()
    args = vars(
        parser.parse_args(with_default_command(sys.argv[1:] if argv is None else argv, parser))
    )
    args.pop("command")
    handler: Callable[[dict[str, Any]], int] = args.pop("handler")
    return handler(args)


def _run(args: dict[str, Any]) -> int:
    from plowline_cloud.logging import configure_logging
    from plowline_cloud.service_settings import EmulatorEndpoints

    from plowline_repeater.bootstrap import run
    from plowline_repeater.settings import ENV_PREFIX, RepeaterSettings

    try:
        settings = RepeaterSettings(**args)
        endpoints = EmulatorEndpoints()  # type: ignore[call-arg]  # values come from the environment
    except ValidationError as error:
        flags = flag_names(build_parser(), "run")
        problem = describe_errors(error, ENV_PREFIX, flags)
        print(f"plowline-repeater: {problem}", file=sys.stderr)
        return EXIT_USAGE
    configure_logging("repeater", "DEBUG" if settings.verbose else "INFO", settings.log_json)
    return guarded("plowline-repeater", lambda: run(settings, endpoints))


if __name__ == "__main__":
    sys.exit(main())
