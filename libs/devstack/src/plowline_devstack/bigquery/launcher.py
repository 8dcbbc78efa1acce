"""Launch bqemulator in this process: offline start, corrections installed, then serve."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from plowline_core.errors import ConfigError

from plowline_devstack.bigquery import corrections, insert_dedup, offline
from plowline_devstack.faults import bigquery_rest, bigquery_write
from plowline_devstack.faults.plan import load_faults


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse the launcher's command line."""
    parser = argparse.ArgumentParser(
        prog="python -m plowline_devstack.bigquery",
        description="bqemulator 1.4.0, offline, with plowline's BigQuery fidelity corrections.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="REST and gRPC bind host")
    parser.add_argument("--port", type=int, default=9050, help="REST port (0 = any free port)")
    parser.add_argument("--grpc-port", type=int, default=9060, help="gRPC (Storage API) port")
    parser.add_argument("--project", default="plowline-local", help="default project id")
    parser.add_argument(
        "--data-dir", type=Path, help="persist the DuckDB database here (default: in memory)"
    )
    parser.add_argument(
        "--no-corrections", action="store_true", help="serve bqemulator as shipped (no corrections)"
    )
    parser.add_argument(
        "--disable-correction",
        action="append",
        default=[],
        choices=corrections.CORRECTION_NAMES,
        metavar="NAME",
        help=f"leave one correction out (repeatable): {', '.join(corrections.CORRECTION_NAMES)}",
    )
    parser.add_argument(
        "--insert-id-window",
        type=float,
        default=insert_dedup.DEFAULT_WINDOW_S,
        metavar="SECONDS",
        help="insertAll de-duplicates a row's insertId for this long, as BigQuery (default: 60)",
    )
    parser.add_argument(
        "--faults",
        type=Path,
        default=None,
        metavar="FILE",
        help="fault file (TOML or JSON) whose [bigquery] faults this emulator injects; see "
        "`plowline dev faults` and plowline_devstack/faults/plan.py (default: no faults)",
    )
    parser.add_argument("--log-level", default="warning", help="emulator log level")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    """Start the emulator and serve until SIGTERM/SIGINT."""
    args = parse_args(argv)
    try:
        plan = load_faults(args.faults)
    except ConfigError as error:
        print(f"python -m plowline_devstack.bigquery: {error}", file=sys.stderr)
        raise SystemExit(2) from error
    offline.start_offline()
    disabled = corrections.CORRECTION_NAMES if args.no_corrections else args.disable_correction
    bigquery_rest.configure(bigquery_rest.BigQueryFaults(plan.for_server("bigquery"), plan.seed))
    rest = bigquery_rest.rest_faults() if plan.for_server("bigquery") else ()
    corrections.install((*rest, *corrections.select(disabled)))
    bigquery_write.install()
    insert_dedup.configure(args.insert_id_window)

    # Imported late: bqemulator reads BQEMU_* settings from the environment set above.
    from bqemulator.config import LogLevel, PersistenceMode, Settings
    from bqemulator.server import run_forever

    persistent = args.data_dir is not None
    settings = Settings(
        rest_host=args.host,
        rest_port=args.port,
        grpc_host=args.host,
        grpc_port=args.grpc_port,
        default_project_id=args.project,
        enable_format_extensions=False,
        persistence_mode=PersistenceMode.PERSISTENT if persistent else PersistenceMode.EPHEMERAL,
        data_dir=args.data_dir,
        log_level=LogLevel(args.log_level.lower()),
    )
    run_forever(settings)
