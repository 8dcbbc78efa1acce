"""Correction: insertAll fills a TIMESTAMP column given the value ``"AUTO"`` with the insert time.

Real BigQuery (streaming inserts): the string ``"AUTO"`` for a TIMESTAMP column stores
the time of insertion. Snowplow's loader relies on it: every row carries
``"load_tstamp": "AUTO"`` so that BigQuery stamps when the event became queryable.

bqemulator 1.4.0 tries to parse ``"AUTO"`` as a timestamp and rejects the request
(``Cannot convert value to timestamp``). This correction replaces ``"AUTO"`` in the
table's top-level TIMESTAMP columns with the current UTC time before the request is
validated and stored.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from plowline_devstack.bigquery.interception import Correction, Exchange, Reply, dumps

_INSERT_ALL = "/bigquery/v2/projects/{project}/datasets/{dataset}/tables/{table}/insertAll"
_AUTO = "AUTO"


async def fill_auto_timestamps(exchange: Exchange) -> Reply:
    """Replace ``"AUTO"`` in TIMESTAMP columns with the insert time, then pass the request on."""
    table = exchange.context.catalog.get_table(
        exchange.params["project"], exchange.params["dataset"], exchange.params["table"]
    )
    if table is None or _AUTO.encode() not in exchange.body:
        return await exchange.forward(exchange.body)
    columns = {f.name for f in table.schema_.fields if str(f.type).upper() == "TIMESTAMP"}
    body = exchange.json()
    now = datetime.now(UTC).isoformat()
    changed = False
    for row in body.get("rows") or []:
        values: Any = row.get("json") if isinstance(row, dict) else None
        if not isinstance(values, dict):
            continue
        for name in columns & values.keys():
            if values[name] == _AUTO:
                values[name] = now
                changed = True
    return await exchange.forward(dumps(body) if changed else exchange.body)


INSERT_AUTO_TIMESTAMP = Correction(
    name="insert-auto-timestamp",
    summary='insertAll stores the insert time for a TIMESTAMP value "AUTO"',
    methods=("POST",),
    paths=(_INSERT_ALL,),
    handler=fill_auto_timestamps,
)
