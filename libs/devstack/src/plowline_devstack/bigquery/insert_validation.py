"""Correction: insertAll rejects rows the way real BigQuery does.

Real BigQuery (``tabledata.insertAll``):

* a row naming a field the table does not have is rejected, ``reason: invalid``,
  ``message: no such field: X.`` (unless ``ignoreUnknownValues`` is set);
* a row missing a REQUIRED field (or giving it null) is rejected,
  ``Missing required field: X.``;
* a value that cannot be converted to its column type rejects that row only
  (``Cannot convert value to integer (bad value): abc``), never the whole request;
* nested RECORD and REPEATED fields are checked the same way (dotted locations);
* with ``skipInvalidRows`` false (the default) one bad row stops the request: the bad
  rows carry their ``invalid`` error, every other row ``reason: stopped``, and nothing
  is inserted; with ``skipInvalidRows`` true only the bad rows are rejected and the
  rest are inserted.

bqemulator 1.4.0 instead drops unknown fields silently, stores NULL for a missing
REQUIRED field, and answers a wrong-typed value with HTTP 500 for the whole request.
"""

from __future__ import annotations

from typing import Any

from plowline_devstack.bigquery.interception import Correction, Exchange, Reply, dumps
from plowline_devstack.bigquery.row_checks import RowProblem, check_row

_INSERT_ALL = "/bigquery/v2/projects/{project}/datasets/{dataset}/tables/{table}/insertAll"
_KIND = "bigquery#tableDataInsertAllResponse"
_STOPPED = {"reason": "stopped", "location": "", "debugInfo": "", "message": ""}


async def reject_invalid_rows(exchange: Exchange) -> Reply:
    """Check every row before the emulator sees it; answer per-row errors like BigQuery."""
    table = exchange.context.catalog.get_table(
        exchange.params["project"], exchange.params["dataset"], exchange.params["table"]
    )
    body = exchange.json()
    rows = body.get("rows") or []
    if table is None or not isinstance(rows, list) or not rows:
        return await exchange.forward(exchange.body)
    fields = table.schema_.fields
    ignore_unknown = bool(body.get("ignoreUnknownValues", False))
    cache: dict[int, Any] = {}  # the schema's name indexes, built once for the request
    problems = {
        i: p
        for i, row in enumerate(rows)
        if (p := _problem(fields, row, ignore_unknown, cache)) is not None
    }
    if not problems:
        return await exchange.forward(exchange.body)
    if not body.get("skipInvalidRows", False):
        return Reply.of_json(
            200, {"kind": _KIND, "insertErrors": _stopped_errors(len(rows), problems)}
        )
    return await _insert_valid_rows(exchange, body, problems)


def _problem(
    fields: Any, row: Any, ignore_unknown: bool, cache: dict[int, Any]
) -> RowProblem | None:
    values = row.get("json") if isinstance(row, dict) else None
    if not isinstance(values, dict):
        return RowProblem("", "Row has no json object.")
    return check_row(fields, values, ignore_unknown=ignore_unknown, cache=cache)


def _stopped_errors(count: int, problems: dict[int, RowProblem]) -> list[dict[str, Any]]:
    """Give the bad rows their ``invalid`` error and every other row ``stopped``."""
    return [
        {"index": i, "errors": [problems[i].to_api() if i in problems else dict(_STOPPED)]}
        for i in range(count)
    ]


async def _insert_valid_rows(
    exchange: Exchange, body: dict[str, Any], problems: dict[int, RowProblem]
) -> Reply:
    """Forward only the good rows; merge the emulator's errors back under original indexes."""
    kept = [i for i in range(len(body["rows"])) if i not in problems]
    errors: list[dict[str, Any]] = [
        {"index": i, "errors": [p.to_api()]} for i, p in problems.items()
    ]
    if kept:
        reply = await exchange.forward(dumps({**body, "rows": [body["rows"][i] for i in kept]}))
        if reply.status != 200:
            return reply
        for error in reply.json().get("insertErrors") or []:
            errors.append({**error, "index": kept[int(error.get("index", 0))]})
    errors.sort(key=lambda e: int(e["index"]))
    return Reply.of_json(200, {"kind": _KIND, "insertErrors": errors})


INSERT_VALIDATION = Correction(
    name="insert-validation",
    summary="insertAll rejects unknown fields, missing REQUIRED fields and wrong types per row",
    methods=("POST",),
    paths=(_INSERT_ALL,),
    handler=reject_invalid_rows,
)
