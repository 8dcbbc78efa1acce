"""``plowline-mutator add-column``: add the column of one schema by hand (no-op if it exists).

Exit codes: 0 the column exists now (added or already there), 1 the schema is unknown, the
column conflicts with the table, or a service failed, 2 usage or configuration error.
"""

from __future__ import annotations

import argparse
import sys

import orjson
import structlog
from plowline_cloud.chassis import EXIT_OK, EXIT_UNAVAILABLE
from plowline_core.iglu.key import SchemaKey
from plowline_core.schema.entity import EntityType

from plowline_mutator.bootstrap import build_runtime
from plowline_mutator.options import Subparsers, add_config, run_job, shred_property
from plowline_mutator.settings import MutatorSettings

_log = structlog.get_logger("plowline.mutator.add_column")


def register(subparsers: Subparsers) -> None:
    """Add the ``add-column`` subcommand to the CLI."""
    parser = subparsers.add_parser(
        "add-column", help="add the column of one schema (no-op if it exists)", description=__doc__
    )
    add_config(parser)
    parser.add_argument(
        "--schema",
        required=True,
        type=_schema_key,
        metavar="iglu:URI",
        help="iglu:vendor/name/format/M-R-A",
    )
    parser.add_argument(
        "--shred-property",
        "--shredProperty",
        dest="shred_property",
        required=True,
        type=shred_property,
        metavar="{CONTEXTS,DERIVED_CONTEXTS,UNSTRUCT_EVENT}",
        help="where the entity sits in the event",
    )
    parser.set_defaults(handler=lambda args: run_job(_add_column, args))


def _add_column(settings: MutatorSettings, args: argparse.Namespace) -> int:
    entity = EntityType(args.schema, args.shred_property)
    runtime = build_runtime(settings)
    try:
        result = runtime.mutator.add_types([entity])
    finally:
        runtime.close()
    if entity in result.unknown:
        _log.error("schema not found", schema=entity.schema.to_uri())
        return EXIT_UNAVAILABLE
    conflicts = result.conflicts_of(entity)
    if conflicts:
        _log.error("column conflicts with the table", reasons=[c.reason for c in conflicts])
        return EXIT_UNAVAILABLE
    column = result.columns[entity]
    _log.info("column added" if result.was_added(entity) else "column exists", column=column.name)
    sys.stdout.write(orjson.dumps(column.to_api()).decode() + "\n")
    return EXIT_OK


def _schema_key(text: str) -> SchemaKey:
    try:
        return SchemaKey.parse(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
