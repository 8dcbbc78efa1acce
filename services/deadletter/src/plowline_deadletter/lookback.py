"""Recall the bad rows written lately, so that a restarted writer knows what it wrote.

A writer killed after writing an object, before its acks reached Pub/Sub, gets those
messages again; so does the next writer when the loader republished a bad row. A fresh
writer remembers nothing, so at start, before it takes any message, it reads the
objects written within the lookback (``--dedupLookback``, default 600 s; 0 = off) and
remembers the identity of each of their bad rows (``DeadLetterWriter.recall``).

The recent objects are found without walking the bucket. Names are
``<partition>/YYYY/MM/DD/HH/<stamp>-<id>…`` (``layout``): list the partitions (the
bad-row types, then their formats, and ``unparseable``: a few delimiter listings), then
in each only the hour folders the lookback covers, keep the names stamped within it, and
read those, oldest first, so that a bounded memory keeps the newest.

Notes:
    A stamp is a window's start, so an object written at ``t`` is stamped at most one
    window earlier: the lookback reaches one ``window`` further back than asked.
    Never refuses a start: a failing read (after the store's own retries) ends the
    lookback and the writer starts with what was read; ``Recalled.error`` says why and
    the caller warns. At least once holds either way; only duplicates can follow. An
    object that is not whole gzip is skipped (``Recalled.skipped``).
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

import structlog
from plowline_core.errors import PlowlineError
from plowline_core.ports import BlobStore

from plowline_deadletter.identity import identity
from plowline_deadletter.layout import UNPARSEABLE, hour_folders, object_lines, stamp_of
from plowline_deadletter.metrics import DeadLetterMetrics
from plowline_deadletter.writer import DeadLetterWriter

_log = structlog.get_logger(__name__)
_PROGRESS_EVERY = 200  # objects between two progress lines


@dataclass(frozen=True, slots=True)
class Lookback:
    """How far back to read at start (``seconds``, 0 = off) and the writer's ``window``."""

    seconds: float
    window: float


@dataclass(frozen=True, slots=True)
class Recalled:
    """What the lookback read: objects, their bad rows, and why it stopped early, if it did."""

    objects: int = 0
    rows: int = 0
    skipped: int = 0
    error: str | None = None

    @property
    def complete(self) -> bool:
        """True when every object of the lookback was read."""
        return self.error is None


def recall_at_start(
    store: BlobStore,
    writer: DeadLetterWriter,
    now: datetime,
    lookback: Lookback,
    metrics: DeadLetterMetrics,
    monotonic: Callable[[], float],
) -> Recalled:
    """Recall the lookback into ``writer``; log the figures, warn and set the metric on failure."""
    if lookback.seconds <= 0:
        _log.info("lookback off: bad rows written before this start may be written again")
        return Recalled()
    _log.info("lookback reading", seconds_back=lookback.seconds)
    started = monotonic()
    recalled = recall(store, writer, now, lookback)
    figures = {
        "objects": recalled.objects,
        "rows": recalled.rows,
        "skipped": recalled.skipped,
        "seconds": round(monotonic() - started, 3),
    }
    metrics.lookback_rows.set(recalled.rows)
    metrics.lookback_incomplete.set(0 if recalled.complete else 1)
    if recalled.complete:
        _log.info("lookback read", **figures)
    else:
        _log.warning(
            "lookback failed: starting without a full memory of the bad rows written before, "
            "so copies of them may be written again (check roles/storage.objectViewer on the "
            "bucket, or run with --dedupLookback 0)",
            error=recalled.error,
            **figures,
        )
    return recalled


def recall(
    store: BlobStore, writer: DeadLetterWriter, now: datetime, lookback: Lookback
) -> Recalled:
    """Tell ``writer`` the bad rows of the objects written within the lookback before ``now``."""
    if lookback.seconds <= 0:
        return Recalled()
    since = now - timedelta(seconds=lookback.seconds + lookback.window)
    try:
        names = recent_objects(store, since, now)
    except PlowlineError as error:
        return Recalled(error=f"listing the bucket failed: {error}")
    objects = rows = skipped = 0
    for name in names:
        try:
            body = store.get(name)
        except PlowlineError as error:
            return Recalled(objects, rows, skipped, f"reading {name} failed: {error}")
        try:
            lines = object_lines(name, body)
        except (gzip.BadGzipFile, EOFError, zlib.error) as error:
            _log.warning("object not recalled: not whole gzip", object=name, error=str(error))
            skipped += 1
            continue
        writer.recall(identity(line) for line in lines)
        objects, rows = objects + 1, rows + len(lines)
        if objects % _PROGRESS_EVERY == 0:
            _log.info("lookback reading", objects=objects, of=len(names), rows=rows)
    return Recalled(objects, rows, skipped)


def recent_objects(store: BlobStore, since: datetime, until: datetime) -> list[str]:
    """Return the names of the objects stamped since ``since`` (hours up to ``until``'s), oldest first."""
    hours = hour_folders(since, until)
    found: list[tuple[datetime, str]] = []
    for partition in _partitions(store):
        for hour in hours:
            for name in store.list(partition + hour):
                stamp = stamp_of(name)
                if stamp is not None and stamp >= since:  # a later one: another's clock
                    found.append((stamp, name))
    return [name for _, name in sorted(found)]


def _partitions(store: BlobStore) -> list[str]:
    """Return the partition folders: ``<vendor>.<name>/<format>-<model>/`` and ``unparseable/``."""
    out: list[str] = []
    for kind in store.folders():
        out.extend([kind] if kind == f"{UNPARSEABLE}/" else store.folders(kind))
    return out
