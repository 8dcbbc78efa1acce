"""Correction: a write costs the same however large the table is.

Real BigQuery: a streaming insert, a Storage Write API append or a DML statement costs
what it writes; time travel is a property of the storage, not a copy made per write.

bqemulator 1.4.0 implements time travel by copying the whole table into a snapshot table
(``CREATE TABLE … AS SELECT *``) after every successful write, under the engine's write
lock. A stream of 500-row insertAll requests into a Snowplow events table therefore gets
slower with every row already there: on this machine a 2,000-event micro-batch took 1.1 s
on an empty table and 3.3 s once it held 60,000 rows, so loader latencies measured on the
local stack measured the emulator's copy, not the loader.

This correction keeps ``record_change``'s notification (``TableDataChanged``, which the
emulator's caches rely on) and skips the copy. What that changes: ``FOR SYSTEM_TIME AS OF``
reads the live table (bqemulator's rule for a table without snapshots); snapshots taken on
purpose (``CREATE SNAPSHOT TABLE``) are untouched. Nothing in plowline uses time travel;
leave this correction out (``--disable-correction write-snapshots``) to get it back.
"""

from __future__ import annotations

from typing import Any

from bqemulator.domain.events import TableDataChanged
from bqemulator.versioning.snapshots import SnapshotManager

from plowline_devstack.bigquery.interception import Correction


def record_change_without_copy(self: Any, project_id: str, dataset_id: str, table_id: str) -> None:
    """Publish ``TableDataChanged`` for a write, without copying the table into a snapshot."""
    self._events.publish(TableDataChanged(project_id, dataset_id, table_id))


def skip_write_snapshots() -> None:
    """Make every write path's ``record_change`` notify only."""
    SnapshotManager.record_change = record_change_without_copy  # type: ignore[method-assign]  # the seam: every write path calls it


WRITE_SNAPSHOTS = Correction(
    name="write-snapshots",
    summary="writes no longer copy the whole table into a time-travel snapshot",
    patch=skip_write_snapshots,
)
