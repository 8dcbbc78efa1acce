"""``plowline-repeater replay``: put the rows of dead-end objects back, by hand."""

from __future__ import annotations

import argparse
import re
import sys
from datetime import datetime
from typing import Any

from plowline_cloud.chassis import EXIT_USAGE, guarded
from pydantic import ValidationError

from plowline_repeater.replay_plan import parse_moment

_DESCRIPTION = """\
Re-insert the rows of dead-end objects (loader_recovery_error bad rows written by
`plowline-repeater run`) into the events table, or republish them to the failed-inserts
topic. Use it once the cause is fixed: the column was added, the type corrected."""

_EPILOG = """\
what it reads:
  <path>/YYYY/MM/DD/HH/<UTC timestamp>-<id>.ndjson   one loader_recovery_error per line;
  the payload of each is the failed-insert row, re-inserted with insertId = event_id.
  --since/--until compare the time in the object's name (UTC; --since included,
  --until excluded; a date alone is its midnight UTC, so --until 2026-11-23 takes all of
  the 22nd). --error-matches REGEX (Python syntax, searched in the bad row's
  failure.error.message) takes only the rows it matches.

what it leaves behind (so that running it again has nothing left to do):
  <path>/replayed/<name>          the object, once every line of it is settled
  <path>/failed/<name>            rows the table refused again, as new bad rows
                                  (the same layout: `replay gs://BUCKET/PATH/failed` later)
  <path>/unrecoverable/<name>     lines that hold no row at all, exactly as they were
  <path>/.../<name>.rest.ndjson   rows --error-matches left out (still an input)
  Objects under replayed/, failed/ and unrecoverable/ are never read.

crash safety:
  results are written and rows inserted before an object is moved; a crash (or an
  unavailable BigQuery, which stops the run) leaves the object in place, and the next run
  replays its rows again. Rows go in as the config's load mode writes them: in
  exactly-once mode (STORAGE_WRITE_API, stream exactly-once) through the loader's ledger,
  so a row already in the table is never written again, however much later; otherwise
  with insertId = event_id, which BigQuery deduplicates for about a minute only.

exit codes:
  0  every row taken was recovered (or there was nothing to do); a dry run that could read
  1  some rows failed again or some lines were unrecoverable, or a dependency failed
  2  usage or configuration error

example (stderr shows "replaying [#######-------] 1/2 objects  2 recovered, 1 failed"
while it works, wiped before the summary):
  $ plowline-repeater replay gs://plowline-dead-end/prod --since 2026-11-22 \\
        --config bigquery.json --dry-run
  Dry run, nothing changed. Replaying gs://plowline-dead-end/prod/ to table
  acme.snowplow.events would take 2 objects:

    2026/11/22/05/20261122T051307.250Z-4f1c2a9e.ndjson  3 rows to replay, 1 unrecoverable
    2026/11/22/06/20261122T060012.031Z-8be07d11.ndjson  1 row to replay
  ...
  $ plowline-repeater replay gs://plowline-dead-end/prod --since 2026-11-22 \\
        --config bigquery.json
  Replayed 2 objects of 2 from gs://plowline-dead-end/prod/ to table acme.snowplow.events:

    2026/11/22/05/20261122T051307.250Z-4f1c2a9e.ndjson  2 recovered, 1 failed, 1 unrecoverable
    2026/11/22/06/20261122T060012.031Z-8be07d11.ndjson  1 recovered

  recovered       3 rows in the destination
  failed          1 row
                    filed -> failed/2026/11/22/05/20261122T051307.250Z-4f1c2a9e.ndjson
  unrecoverable   1 line
                    filed -> unrecoverable/2026/11/22/05/20261122T051307.250Z-4f1c2a9e.ndjson
  replayed        2 objects moved under replayed/

  Rows that failed again can be replayed later: replay gs://plowline-dead-end/prod/failed/
  $ echo $?
  1
  $ plowline-repeater replay gs://plowline-dead-end/prod --config bigquery.json
  Nothing to do: no dead-end objects to replay under gs://plowline-dead-end/prod/.

The progress bar is drawn on stderr when it is a terminal; the summary goes to stdout.
STORAGE_EMULATOR_HOST, BIGQUERY_EMULATOR_HOST and PUBSUB_EMULATOR_HOST point at local
stand-ins.
"""


def register(commands: Any) -> None:
    """Add the ``replay`` parser."""
    replay = commands.add_parser(
        "replay",
        help="re-insert rows from dead-end objects (by hand)",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    replay.add_argument(
        "url", metavar="gs://BUCKET/PATH", type=_gs_url, help="the dead-end path (--deadEndBucket)"
    )
    replay.add_argument(
        "--since", type=_moment, metavar="TIME", help="only objects written at or after TIME"
    )
    replay.add_argument(
        "--until", type=_moment, metavar="TIME", help="only objects written before TIME"
    )
    replay.add_argument(
        "--error-matches",
        dest="error_matches",
        type=_pattern,
        metavar="REGEX",
        help="only rows whose failure message matches REGEX (re.search)",
    )
    replay.add_argument(
        "--to",
        choices=("table", "failed-inserts"),
        default="table",
        help="insert into the table (default), or republish to the failedInserts topic "
        "for `plowline-repeater run` to insert",
    )
    replay.add_argument(
        "--dry-run",
        dest="dry_run",
        action="store_true",
        help="read and report what would happen; write, insert and move nothing",
    )
    replay.add_argument(
        "--config",
        metavar="PATH|BASE64",
        help="Snowplow config (0.x JSON or 1.x HOCON, a path or base64): the table and "
        "failedInserts topic (needed unless --dry-run)",
    )
    replay.add_argument(
        "--ledger-table",
        dest="ledger_table",
        metavar="PROJECT.DATASET.TABLE",
        help="exactly-once mode only: the loader's ledger of event ids (its --ledger-table; "
        "default <events table>_ledger)",
    )
    replay.add_argument(
        "--resolver",
        "--iglu-config",  # Snowplow 2.x's name
        dest="resolver",
        metavar="PATH|BASE64",
        help="Iglu resolver config: accepted as Snowplow passes it, not needed to replay",
    )
    replay.set_defaults(handler=_handle)


def _handle(args: dict[str, Any]) -> int:
    from plowline_cloud.service_settings import EmulatorEndpoints

    from plowline_repeater.bootstrap import replay
    from plowline_repeater.settings import ReplaySettings

    since, until = args.get("since"), args.get("until")
    if since is not None and until is not None and until <= since:
        print("plowline-repeater replay: --until must be after --since", file=sys.stderr)
        return EXIT_USAGE
    args.pop("resolver", None)  # accepted, not used: replaying needs no schemas
    settings = ReplaySettings(**args)
    try:
        endpoints = EmulatorEndpoints()  # type: ignore[call-arg]  # values come from the environment
    except ValidationError as error:
        print(f"plowline-repeater replay: invalid environment:\n{error}", file=sys.stderr)
        return EXIT_USAGE
    return guarded("plowline-repeater replay", lambda: replay(settings, endpoints))


def _gs_url(text: str) -> str:
    bucket = text.removeprefix("gs://").split("/", 1)[0]
    if not text.startswith("gs://") or not bucket:
        raise argparse.ArgumentTypeError(f"expected gs://BUCKET/PATH, got {text!r}")
    return text


def _moment(text: str) -> datetime:
    moment = parse_moment(text)
    if moment is None:
        raise argparse.ArgumentTypeError(
            f"expected an ISO-8601 date or time (2026-11-22, 2026-11-22T05:00Z), got {text!r}"
        )
    return moment


def _pattern(text: str) -> re.Pattern[str]:
    try:
        return re.compile(text)
    except re.error as error:
        raise argparse.ArgumentTypeError(f"not a valid regular expression: {error}") from error
