"""``plowline-mutator preview``: print the column the mutator would add for each schema.

One compact JSON object per input URI, in input order: the column in BigQuery schema JSON
(``Field.to_api()``), or ``{"schema": uri, "error": "..."}`` for a malformed URI, a schema
no repository has, or a repository that cannot answer. Nothing is written anywhere.

Exit codes: 0 every schema resolved; 1 at least one error object; 2 usage or config error.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Iterator
from typing import Any, TextIO

import orjson
from plowline_cloud.chassis import EXIT_OK, EXIT_USAGE
from plowline_cloud.clock import SystemClock
from plowline_cloud.command_line import add_resolver
from plowline_cloud.config_source import load_pipeline_config
from plowline_cloud.iglu import NOT_FOUND_HELP, load_resolver
from plowline_core.errors import ConfigError, RegistryUnavailable
from plowline_core.iglu.config import parse_not_found
from plowline_core.iglu.key import SchemaKey
from plowline_core.iglu.resolver import SchemaNotFound
from plowline_core.ports import SchemaResolver
from plowline_core.schema.columns import column_field
from plowline_core.schema.ddl_json import InvalidSchema
from plowline_core.schema.entity import ColumnMode, ShredProperty
from plowline_core.schema.major import INVALID_SCHEMA_MESSAGE, major_column

from plowline_mutator.options import shred_property

EXIT_ERRORS = 1
"""What ``preview`` exits with when a type cannot be mapped (0 and 2: ``plowline_cloud.chassis``)."""

_DESCRIPTION = """\
Print, for each schema, the BigQuery column the mutator would add for it, without
touching any table. One compact JSON object per line, in input order: the column in
BigQuery schema JSON ({"name","type","mode","fields"}), or {"schema": URI, "error": ...}
when the URI is malformed or the schema cannot be resolved.
"""
_EPILOG = """\
examples:
  plowline-mutator preview --resolver resolver.json --shred-property CONTEXTS \\
      iglu:com.snowplowanalytics.snowplow/web_page/jsonschema/1-0-0
  cut -f1 types.txt | plowline-mutator preview --resolver resolver.json \\
      --shred-property UNSTRUCT_EVENT --column-mode major -

exit status: 0 all schemas resolved, 1 some printed an error object, 2 usage or config error.
"""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``preview`` subcommand to the CLI."""
    parser = subparsers.add_parser(
        "preview",
        help="print the column the mutator would add for each schema (no table access)",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_resolver(
        parser, help="Iglu resolver config (JSON or HOCON, a path or base64) (2.x: --iglu-config)"
    )
    parser.add_argument(
        "--config",
        metavar="PATH|BASE64",
        help="Snowplow config (0.x JSON or 1.x HOCON): optional here, checked when given",
    )
    parser.add_argument(
        "--shred-property",
        required=True,
        type=shred_property,
        metavar="{UNSTRUCT_EVENT,CONTEXTS,DERIVED_CONTEXTS}",
        help="where the entity sits in the event; decides column prefix and mode",
    )
    parser.add_argument("--iglu-not-found", metavar="NAME=STATUS,…;…", help=NOT_FOUND_HELP)
    parser.add_argument(
        "--column-mode",
        default=ColumnMode.FULL,
        type=ColumnMode,
        choices=list(ColumnMode),
        help="full: one column per full SchemaVer, v1 types (default); "
        "major: one column per model, v2 types",
    )
    parser.add_argument(
        "schemas",
        nargs="+",
        metavar="SCHEMA_URI",
        help="iglu:vendor/name/jsonschema/M-R-A; '-' reads URIs from stdin, one per line",
    )
    parser.set_defaults(handler=run)


def _warn(message: str) -> None:
    print(f"plowline-mutator preview: {message}", file=sys.stderr)


def run(args: argparse.Namespace, stdin: TextIO | None = None, stdout: TextIO | None = None) -> int:
    """Resolve every URI and print one JSON line each; return the exit code."""
    stdin = sys.stdin if stdin is None else stdin
    stdout = sys.stdout if stdout is None else stdout
    try:
        not_found = parse_not_found(args.iglu_not_found or "")
        if args.config is not None:
            load_pipeline_config(args.config, warn=_warn)  # stdout holds the lines
        resolver = load_resolver(args.resolver, SystemClock(), not_found)
    except ConfigError as error:
        print(f"plowline-mutator preview: {error}", file=sys.stderr)
        return EXIT_USAGE
    uris = _expand(args.schemas, stdin)
    failed = False
    for line in preview(uris, resolver, args.shred_property, args.column_mode):
        failed = failed or "error" in line
        stdout.write(orjson.dumps(line).decode() + "\n")
    stdout.flush()
    return EXIT_ERRORS if failed else EXIT_OK


def preview(
    uris: Iterable[str], resolver: SchemaResolver, shred: ShredProperty, mode: ColumnMode
) -> Iterator[dict[str, Any]]:
    """Yield the column (``to_api`` form) or an error object for each URI, in order."""
    for uri in uris:
        yield _preview_one(uri, resolver, shred, mode)


def _preview_one(
    uri: str, resolver: SchemaResolver, shred: ShredProperty, mode: ColumnMode
) -> dict[str, Any]:
    try:
        key = SchemaKey.parse(uri)
    except ValueError as error:
        return {"schema": uri, "error": str(error)}
    try:
        resolution = resolver.resolve(key)
    except RegistryUnavailable as error:
        return {"schema": uri, "error": f"registry unavailable: {error}"}
    if isinstance(resolution, SchemaNotFound):
        tried = ", ".join(attempt.repository for attempt in resolution.lookup_history)
        return {"schema": uri, "error": f"schema not found (looked up in: {tried or 'none'})"}
    if mode is not ColumnMode.MAJOR:
        return column_field(key, resolution.schema, shred, mode).to_api()
    try:
        major = major_column(key, shred, resolver)
    except InvalidSchema as error:
        return {"schema": uri, "error": f"{INVALID_SCHEMA_MESSAGE}: {error}"}
    except RegistryUnavailable as error:
        return {"schema": uri, "error": f"registry unavailable: {error}"}
    if isinstance(major, SchemaNotFound) or major.field is None:
        return {"schema": uri, "column": None, "note": "2.x adds no column for this schema"}
    return major.field.to_api()


def _expand(arguments: Iterable[str], stdin: TextIO) -> Iterator[str]:
    for argument in arguments:
        if argument == "-":
            yield from (line.strip() for line in stdin if line.strip())
        else:
            yield argument
