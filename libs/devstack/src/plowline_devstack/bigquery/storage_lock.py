"""The lock that keeps a table's widening and the Write API's appends apart.

Real BigQuery: a table widened while Write API appends run takes both; appends keep
landing (the new columns NULL) and the widening is not refused.

bqemulator 1.4.0 widens in two steps, the catalog first and the DuckDB table second
(:mod:`.table_patch`), on the REST event loop, while appends run on gRPC worker threads
guarded by a lock the REST side never takes. An append that reads the widened catalog
before DuckDB is altered fails (``table t has 10 columns but 11 values were supplied``)
and closes the writer's connection; an ``ALTER TABLE`` racing an append's transaction can
invalidate the whole database (``FATAL … database has been invalidated``), after which
every call fails until the emulator restarts. Holding :data:`WIDENING` over each widening
(catalog and DuckDB) and over each append (catalog read and INSERT) makes the two steps
one, as seen by an append.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

WIDENING = threading.Lock()
"""Held by an append (a gRPC thread) and by a widening (the event loop)."""


@asynccontextmanager
async def widening_held() -> AsyncIterator[None]:
    """Hold :data:`WIDENING` from the event loop without blocking it while appends finish."""
    acquiring = asyncio.ensure_future(asyncio.to_thread(WIDENING.acquire))
    try:
        await asyncio.shield(acquiring)
    except asyncio.CancelledError:  # the lock is still taken by the thread: give it back
        acquiring.add_done_callback(lambda _: WIDENING.release())
        raise
    try:
        yield
    finally:
        WIDENING.release()
