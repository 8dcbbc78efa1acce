"""``plowline-mutator create``: create the events table with the atomic columns (idempotent).

An existing table with every atomic column and the asked partitioning and clustering is
accepted as it is (exit 0); an incompatible one fails with each difference named (exit 1).

For a Snowplow 2.x config the table is the one loader 2.x creates: money columns NUMERIC,
``load_tstamp`` REQUIRED, DAY-partitioned on ``load_tstamp`` and clustered by
``event_name`` (unless --partitionColumn / --clusterBy say otherwise).
"""

from __future__ import annotations

import argparse

import structlog
from plowline_cloud.bigquery import create_events_table
from plowline_cloud.chassis import EXIT_OK, EXIT_USAGE
from plowline_core.event.fields import (
    ATOMIC_COLUMNS,
    V2_ATOMIC_COLUMNS,
    V2_CLUSTER_BY,
    V2_PARTITION_COLUMN,
)
from plowline_core.schema.names import is_valid_name
from plowline_core.v2_config import V2_NAME

from plowline_mutator.bootstrap import build_table_client
from plowline_mutator.options import SERVICE, Subparsers, add_config, run_job
from plowline_mutator.settings import MutatorSettings

_log = structlog.get_logger("plowline.mutator.create")


def register(subparsers: Subparsers) -> None:
    """Add the ``create`` subcommand to the CLI."""
    parser = subparsers.add_parser(
        "create",
        help="create the events table with the atomic columns (idempotent)",
        description=__doc__,
    )
    add_config(parser, resolver=False)
    parser.add_argument(
        "--partitionColumn",
        dest="partition_column",
        metavar="COL",
        help="TIMESTAMP column to partition by (e.g. collector_tstamp)",
    )
    parser.add_argument(
        "--partitioningType",
        dest="partitioning_type",
        default="day",
        type=str.lower,
        choices=["day"],
        help="partitioning type (only DAY)",
    )
    parser.add_argument(
        "--requirePartitionFilter",
        dest="require_partition_filter",
        action="store_true",
        help="queries must filter on the partition column",
    )
    parser.add_argument(
        "--clusterBy",
        dest="cluster_by",
        nargs="+",
        default=[],
        metavar="COL",
        help="up to four columns to cluster by",
    )
    parser.set_defaults(handler=lambda args: run_job(_create, args))


def _create(settings: MutatorSettings, args: argparse.Namespace) -> int:
    columns = {field.name for field in ATOMIC_COLUMNS}
    named = [c for c in [args.partition_column, *args.cluster_by] if c is not None]
    unknown = [c for c in named if not is_valid_name(c) or c not in columns]
    if (
        unknown
        or len(args.cluster_by) > 4
        or (args.require_partition_filter and not args.partition_column)
    ):
        print(
            f"{SERVICE} create: partition/cluster columns must be atomic columns "
            f"(at most 4 to cluster by; --requirePartitionFilter needs --partitionColumn); "
            f"unknown: {unknown}"
        )
        return EXIT_USAGE
    table, client = build_table_client(settings)
    v2 = table.name == V2_NAME
    try:
        created = create_events_table(
            client,
            table.table_ref,
            V2_ATOMIC_COLUMNS if v2 else ATOMIC_COLUMNS,
            partition_column=args.partition_column or (V2_PARTITION_COLUMN if v2 else None),
            require_partition_filter=args.require_partition_filter,
            cluster_by=tuple(args.cluster_by) or (V2_CLUSTER_BY if v2 else ()),
        )
    finally:
        client.close()  # type: ignore[no-untyped-call]  # untyped in the client
    _log.info("table created" if created else "table exists", table=table.table_ref)
    return EXIT_OK
