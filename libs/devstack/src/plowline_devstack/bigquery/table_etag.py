"""Correction: a table update carrying ``If-Match`` is refused when the etag is stale.

Real BigQuery: ``tables.patch`` / ``tables.update`` with an ``If-Match`` header whose etag
is not the table's current one fails with HTTP 412 (``conditionNotMet``, "Precondition
check failed."), and google-cloud-bigquery's ``update_table`` sends the etag of the table
it read. Two writers widening the same table therefore cannot overwrite each other's
columns: the loser re-reads, merges and patches again.

bqemulator 1.4.0 ignores ``If-Match``: a patch built from an out-of-date copy of the
table is applied and silently drops the column the other writer just added. This
correction compares the header with the catalog's etag and answers 412 on a mismatch.

Notes:
    The check and the update run under one lock, so two concurrent updates with the
    same etag cannot both pass the check (real BigQuery's guarantee).
"""

from __future__ import annotations

import asyncio

from plowline_devstack.bigquery.interception import Correction, Exchange, Reply

_TABLE = "/bigquery/v2/projects/{project}/datasets/{dataset}/tables/{table}"
_PRECONDITION_FAILED = {
    "error": {
        "code": 412,
        "message": "Precondition check failed.",
        "errors": [
            {
                "message": "Precondition check failed.",
                "domain": "global",
                "reason": "conditionNotMet",
            }
        ],
        "status": "FAILED_PRECONDITION",
    }
}
_lock: asyncio.Lock | None = None


def _update_lock() -> asyncio.Lock:
    global _lock  # one lock per emulator process, created on its event loop
    if _lock is None:
        _lock = asyncio.Lock()
    return _lock


async def refuse_stale_etag(exchange: Exchange) -> Reply:
    """Answer 412 when ``If-Match`` names another etag; otherwise run the update."""
    expected = exchange.headers.get(b"if-match")
    if expected is None:
        return await exchange.forward(exchange.body)
    async with _update_lock():
        table = exchange.context.catalog.get_table(
            exchange.params["project"], exchange.params["dataset"], exchange.params["table"]
        )
        if table is not None and expected.decode() not in ("*", str(table.etag)):
            return Reply.of_json(412, _PRECONDITION_FAILED)
        return await exchange.forward(exchange.body)


TABLE_ETAG_PRECONDITION = Correction(
    name="table-etag-precondition",
    summary="tables.patch/update with a stale If-Match etag fails with 412 conditionNotMet",
    methods=("PATCH", "PUT"),
    paths=(_TABLE,),
    handler=refuse_stale_etag,
)
