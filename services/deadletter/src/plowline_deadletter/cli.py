"""The ``plowline-deadletter`` console entry (``run``, the default subcommand).

Exit codes (``plowline_cloud.chassis``): 0 stopped cleanly (SIGTERM), 1 a dependency failed
(retry later), 2 usage or configuration error.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from plowline_cloud.chassis import EXIT_USAGE, command_parser, describe_errors, flag_names, guarded
from plowline_cloud.command_line import add_snowplow_inputs, with_default_command
from plowline_cloud.liveness import STALL_TIMEOUT_HELP
from pydantic import ValidationError

_EPILOG = """\
objects:
  <path>/<vendor>.<name>/jsonschema-<model>/YYYY/MM/DD/HH/<window start>-<id>.ndjson[.gz]
  <path>/unparseable/YYYY/MM/DD/HH/<window start>-<id>.bin   (one message per object)
A <vendor>.<name> over 256 characters is cut short and ends in ~<32 hex digits of its
SHA-256>, so every object name stays within GCS's 1,024 bytes. The metrics label a
partition by its name only for Snowplow's bad-row types; any other schema is "other".

A message that is not self-describing JSON (not JSON at all, or JSON spread over several
lines) gets an object of its own holding exactly its bytes, never compressed, so a message
with newlines inside is kept as it came and never mixed up with a neighbour.

A message is acked only once the object holding it is written. A bad row is known by
its bytes, less the moments its failure records (timestamp, lastAttempt, attempts): a
copy delivered again (a Pub/Sub redelivery, or the loader publishing it again under a
new message id) while the first is buffered or after it was written is acked, not
written again. Best effort, like BigQuery's insertId: the writer remembers the last
100,000 bad rows it wrote and, at start, those of the objects written in the last
--dedupLookback seconds (/readyz is false until they are read); a copy later than that,
or at another replica, is written again. Two bad rows that differ only in those moments
count as one bad line delivered twice.

Every option can also be set as PLOWLINE_DEADLETTER_<NAME> (e.g.
PLOWLINE_DEADLETTER_MAX_ROWS=500); the command line wins. PUBSUB_EMULATOR_HOST / STORAGE_EMULATOR_HOST point at local stand-ins.
Endpoints: /healthz, /readyz and /metrics on --port.
"""


def build_parser() -> argparse.ArgumentParser:
    """Return the parser with the ``run`` command."""
    parser, commands = command_parser(
        "plowline-deadletter", "Write Snowplow bad rows from Pub/Sub to a Cloud Storage bucket."
    )
    run = commands.add_parser(
        "run",
        help="consume the bad-rows subscription into the bucket until SIGTERM",
        description="Consume bad rows and write one object per bad-row type per window.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        argument_default=argparse.SUPPRESS,
    )
    add_snowplow_inputs(
        run,
        config_help="Snowplow config, 0.x bigquery_config JSON, 1.x or 2.x HOCON, a path or base64 "
        "(projectId; a 2.x config also names the default --badRowsSub and --bucket)",
        resolver_help="Iglu resolver config: accepted as Snowplow passes it, not needed to write "
        "bad rows",
    )
    run.add_argument(
        "--badRowsSub",
        dest="bad_rows_sub",
        metavar="SUB",
        help="bad-rows subscription: short name in projectId, or projects/P/subscriptions/S "
        "(2.x config default: projects/P/subscriptions/plowline-<dataset>-<table>-bad-rows)",
    )
    run.add_argument(
        "--bucket",
        metavar="gs://BUCKET/PATH",
        help="where objects are written (2.x config default: gs://<project>-plowline-bad-rows)",
    )
    run.add_argument(
        "--window",
        type=float,
        metavar="SECONDS",
        help="seconds of bad rows per object and type (default 60)",
    )
    run.add_argument(
        "--maxRows",
        dest="max_rows",
        type=int,
        metavar="N",
        help="write an object early once it holds N rows (default 10000)",
    )
    run.add_argument("--gzip", action="store_true", help="gzip objects (.ndjson.gz)")
    run.add_argument(
        "--dedupLookback",
        dest="dedup_lookback",
        type=float,
        metavar="SECONDS",
        help="at start, read the objects written in the last SECONDS so that bad rows written "
        "before a restart are not written again (default 600, 0 = off; needs "
        "roles/storage.objectViewer on the bucket)",
    )
    run.add_argument("--port", type=int, help="health and metrics port (default 8081, 0 = any)")
    run.add_argument(
        "--stallTimeout",
        dest="stall_timeout",
        type=float,
        metavar="SECONDS",
        help=f"{STALL_TIMEOUT_HELP} (default: the longer of 600 and --window + 300)",
    )
    run.add_argument("--logLevel", dest="log_level", metavar="LEVEL", help="default INFO")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the arguments, run the command, and return its exit code."""
    parser = build_parser()
    argv = with_default_command(sys.argv[1:] if argv is None else argv, parser)
    args = vars(parser.parse_args(argv))
    args.pop("command")
    args.pop("resolver", None)  # accepted for Snowplow's command line; bad rows need no schemas
    args.pop("iglu_config", None)
    return _run(args)


def _run(args: dict[str, Any]) -> int:
    from plowline_cloud.logging import configure_logging

    from plowline_deadletter.bootstrap import run
    from plowline_deadletter.settings import ENV_PREFIX, DeadLetterSettings

    try:
        settings = DeadLetterSettings(**args)
    except ValidationError as error:
        problem = describe_errors(error, ENV_PREFIX, flag_names(build_parser(), "run"))
        print(f"plowline-deadletter: {problem}", file=sys.stderr)
        return EXIT_USAGE
    configure_logging("deadletter", settings.log_level, settings.log_json)
    return guarded("plowline-deadletter", lambda: run(settings))


if __name__ == "__main__":
    sys.exit(main())
