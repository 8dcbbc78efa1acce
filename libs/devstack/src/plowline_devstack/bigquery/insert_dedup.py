"""Correction: insertAll drops a row whose ``insertId`` the table saw within the window.

Real BigQuery (streaming inserts, troubleshooting page): ``insertId`` de-duplication is
best effort for "up to one minute": a row re-sent with the same ``insertId`` shortly after
it was stored is not stored again, and the response says nothing about it; after the
window (or when BigQuery cannot de-duplicate) the copy is stored. Rows without an
``insertId`` are never de-duplicated.

bqemulator 1.4.0 ignores ``insertId``: every retry of a request whose response was lost,
and every redelivered message, becomes a second row, so no test can tell a retry that
BigQuery would absorb from a real duplicate.

This correction keeps, per table, the ``insertId`` of each row stored in the last
``window`` seconds (60 by default, ``--insert-id-window`` at launch). A row whose id is
in there is answered as stored and not inserted; the ids of a request are reserved before
it is forwarded and released again for the rows the emulator refused, so two concurrent
copies cannot both be stored.

Notes:
    Deterministic inside the window, absent after it: a test that sees a duplicate outside
    the window sees what BigQuery may do; inside it, what BigQuery normally does.
    Runs after ``insert-validation``: rows BigQuery would reject never reach it.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from typing import Any

from plowline_devstack.bigquery.interception import Correction, Exchange, Reply, dumps

_INSERT_ALL = "/bigquery/v2/projects/{project}/datasets/{dataset}/tables/{table}/insertAll"
_KIND = "bigquery#tableDataInsertAllResponse"
DEFAULT_WINDOW_S = 60.0


class InsertIdWindow:
    """The insert ids each table stored recently, forgotten ``window_s`` seconds after."""

    def __init__(self, window_s: float = DEFAULT_WINDOW_S) -> None:
        self.window_s = window_s
        self._seen: dict[tuple[str, str, str], OrderedDict[str, float]] = {}

    def reserve(self, table: tuple[str, str, str], ids: list[str | None], now: float) -> list[bool]:
        """Mark ``ids`` as stored at ``now``; return, per id, whether it was already there."""
        seen = self._seen.setdefault(table, OrderedDict())
        while seen and next(iter(seen.values())) <= now - self.window_s:
            seen.popitem(last=False)
        known: list[bool] = []
        for insert_id in ids:
            repeat = insert_id is not None and insert_id in seen
            known.append(repeat)
            if insert_id is not None and not repeat:
                seen[insert_id] = now
        return known

    def release(self, table: tuple[str, str, str], ids: list[str]) -> None:
        """Forget ``ids`` (rows the emulator did not store after all)."""
        seen = self._seen.get(table, OrderedDict())
        for insert_id in ids:
            seen.pop(insert_id, None)


WINDOW = InsertIdWindow()
"""The emulator process's window (one per process, like its catalog)."""


def configure(window_s: float) -> None:
    """Set the de-duplication window of this emulator process (launch time)."""
    WINDOW.window_s = window_s


async def drop_recent_duplicates(exchange: Exchange) -> Reply:
    """Insert only rows whose ``insertId`` is new in the window; answer the others as stored."""
    body = exchange.json()
    rows = body.get("rows") if isinstance(body, dict) else None
    if not isinstance(rows, list) or not rows:
        return await exchange.forward(exchange.body)
    table = (exchange.params["project"], exchange.params["dataset"], exchange.params["table"])
    ids = [_insert_id(row) for row in rows]
    repeats = WINDOW.reserve(table, ids, time.monotonic())
    kept = [i for i, repeat in enumerate(repeats) if not repeat]
    if not kept:
        return Reply.of_json(200, {"kind": _KIND})
    forwarded = (
        exchange.body
        if len(kept) == len(rows)
        else dumps({**body, "rows": [rows[i] for i in kept]})
    )
    reply = await exchange.forward(forwarded)
    if reply.status != 200:
        WINDOW.release(table, [i for i in (ids[k] for k in kept) if i is not None])
        return reply
    errors = reply.json().get("insertErrors") or []
    refused = [kept[int(error.get("index", 0))] for error in errors]
    WINDOW.release(table, [i for i in (ids[k] for k in refused) if i is not None])
    if len(kept) == len(rows):
        return reply
    remapped = [{**error, "index": kept[int(error.get("index", 0))]} for error in errors]
    return Reply.of_json(200, {"kind": _KIND, **({"insertErrors": remapped} if remapped else {})})


def _insert_id(row: Any) -> str | None:
    insert_id = row.get("insertId") if isinstance(row, dict) else None
    return str(insert_id) if insert_id not in (None, "") else None


INSERT_ID_DEDUP = Correction(
    name="insert-id-dedup",
    summary="insertAll stores a row once per insertId within a window (60 s), as BigQuery's best effort",
    methods=("POST",),
    paths=(_INSERT_ALL,),
    handler=drop_recent_duplicates,
)
