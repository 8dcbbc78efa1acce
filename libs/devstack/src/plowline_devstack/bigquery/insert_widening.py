"""Correction: an insertAll never undoes a widening that lands while it runs.

Real BigQuery: a column added by ``tables.patch`` stays in the table's schema whatever
inserts run at the same time; the rows of those inserts may name it as soon as the patch
has returned.

bqemulator 1.4.0's insertAll reads the table's catalog entry when it starts and, after
its INSERT, writes that entry back with the row count raised. A widening that lands in
between (the insert awaits its body and the engine's write lock, and the widening runs
on the same event loop) is undone in the catalog: ``tables.get`` no longer lists the
column, while DuckDB has it. Seen in CI: the mutator's patch returned, and the loader and
the repeater found the column missing for minutes, refusing every row that named it.

The corrected stand-in holds :data:`.storage_lock.WIDENING` over each insertAll, as a
widening (:mod:`.table_patch`) and each Write API append (:mod:`.write_streams`) do: an
insert runs wholly before or wholly after a widening.
"""

from __future__ import annotations

from plowline_devstack.bigquery.interception import Correction, Exchange, Reply
from plowline_devstack.bigquery.storage_lock import widening_held

_INSERT_ALL = "/bigquery/v2/projects/{project}/datasets/{dataset}/tables/{table}/insertAll"


async def insert_between_widenings(exchange: Exchange) -> Reply:
    """Run the insert (and the corrections after this one) with no widening under way."""
    async with widening_held():
        return await exchange.forward(exchange.body)


INSERT_WIDENING = Correction(
    name="insert-keeps-widening",
    summary="an insertAll running while the table is widened never undoes the new columns",
    methods=("POST",),
    paths=(_INSERT_ALL,),
    handler=insert_between_widenings,
)
