"""Persistence of topics, subscriptions and unacked messages: none, or SQLite.

Notes:
    ``SqliteJournal`` writes behind: RPC threads enqueue statements and return; one
    writer thread drains everything queued into a single WAL transaction, so a burst of
    publishes and acks costs one commit. ``close()`` drains the queue before returning,
    so a graceful stop loses nothing; a crash loses at most the last few milliseconds.
"""

from __future__ import annotations

import queue
import sqlite3
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import structlog

_log = structlog.get_logger("plowline.pubsub")

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS topics (name TEXT PRIMARY KEY, blob BLOB NOT NULL)",
    "CREATE TABLE IF NOT EXISTS subscriptions (name TEXT PRIMARY KEY, blob BLOB NOT NULL)",
    "CREATE TABLE IF NOT EXISTS messages (sub TEXT NOT NULL, mid INTEGER NOT NULL,"
    " blob BLOB NOT NULL, PRIMARY KEY (sub, mid)) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL)",
)
_Op = tuple[str, list[tuple[object, ...]]]


@dataclass
class Snapshot:
    """Everything a journal holds, as stored bytes, messages in publish order."""

    topics: list[bytes] = field(default_factory=list)
    subscriptions: list[bytes] = field(default_factory=list)
    messages: list[tuple[str, bytes]] = field(default_factory=list)
    next_id: int = 1


class Journal(Protocol):
    """Where the broker records state changes so they survive a restart."""

    def load(self) -> Snapshot:
        """Return the state recorded so far."""
        ...

    def put_topic(self, name: str, blob: bytes) -> None:
        """Record a topic."""
        ...

    def delete_topic(self, name: str) -> None:
        """Forget a topic."""
        ...

    def put_subscription(self, name: str, blob: bytes) -> None:
        """Record (or overwrite) a subscription."""
        ...

    def delete_subscription(self, name: str) -> None:
        """Forget a subscription and its messages."""
        ...

    def add_messages(self, rows: list[tuple[str, int, bytes]], next_id: int) -> None:
        """Record ``(subscription, message id, message)`` rows and the next free id."""
        ...

    def remove_messages(self, rows: list[tuple[str, int]]) -> None:
        """Forget acked ``(subscription, message id)`` rows."""
        ...

    def close(self) -> None:
        """Flush and release the journal."""
        ...


class NullJournal:
    """Keep nothing: the in-memory mode."""

    def load(self) -> Snapshot:
        """Return an empty state."""
        return Snapshot()

    def put_topic(self, name: str, blob: bytes) -> None:
        """Do nothing."""

    def delete_topic(self, name: str) -> None:
        """Do nothing."""

    def put_subscription(self, name: str, blob: bytes) -> None:
        """Do nothing."""

    def delete_subscription(self, name: str) -> None:
        """Do nothing."""

    def add_messages(self, rows: list[tuple[str, int, bytes]], next_id: int) -> None:
        """Do nothing."""

    def remove_messages(self, rows: list[tuple[str, int]]) -> None:
        """Do nothing."""

    def close(self) -> None:
        """Do nothing."""


class SqliteJournal:
    """Record state in ``DIR/pubsub.sqlite3`` through one write-behind thread."""

    def __init__(self, data_dir: Path) -> None:
        data_dir.mkdir(parents=True, exist_ok=True)
        self.path = data_dir / "pubsub.sqlite3"
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        for statement in _SCHEMA:
            self._db.execute(statement)
        self._ops: queue.SimpleQueue[_Op | None] = queue.SimpleQueue()
        self._writer = threading.Thread(target=self._write, name="pubsub-journal", daemon=True)
        self._writer.start()

    def load(self) -> Snapshot:
        """Return the recorded state (call before any RPC is served)."""
        db = self._db
        row = db.execute("SELECT value FROM meta WHERE key = 'next_id'").fetchone()
        return Snapshot(
            topics=[r[0] for r in db.execute("SELECT blob FROM topics ORDER BY name")],
            subscriptions=[
                r[0] for r in db.execute("SELECT blob FROM subscriptions ORDER BY name")
            ],
            messages=[
                (r[0], r[1]) for r in db.execute("SELECT sub, blob FROM messages ORDER BY sub, mid")
            ],
            next_id=int(row[0]) if row else 1,
        )

    def put_topic(self, name: str, blob: bytes) -> None:
        """Record a topic."""
        self._ops.put(("INSERT OR REPLACE INTO topics VALUES (?, ?)", [(name, blob)]))

    def delete_topic(self, name: str) -> None:
        """Forget a topic."""
        self._ops.put(("DELETE FROM topics WHERE name = ?", [(name,)]))

    def put_subscription(self, name: str, blob: bytes) -> None:
        """Record (or overwrite) a subscription."""
        self._ops.put(("INSERT OR REPLACE INTO subscriptions VALUES (?, ?)", [(name, blob)]))

    def delete_subscription(self, name: str) -> None:
        """Forget a subscription and its messages."""
        self._ops.put(("DELETE FROM subscriptions WHERE name = ?", [(name,)]))
        self._ops.put(("DELETE FROM messages WHERE sub = ?", [(name,)]))

    def add_messages(self, rows: list[tuple[str, int, bytes]], next_id: int) -> None:
        """Record ``(subscription, message id, message)`` rows and the next free id."""
        if rows:
            self._ops.put(("INSERT OR REPLACE INTO messages VALUES (?, ?, ?)", list(rows)))
        self._ops.put(("INSERT OR REPLACE INTO meta VALUES ('next_id', ?)", [(next_id,)]))

    def remove_messages(self, rows: list[tuple[str, int]]) -> None:
        """Forget acked ``(subscription, message id)`` rows."""
        if rows:
            self._ops.put(("DELETE FROM messages WHERE sub = ? AND mid = ?", list(rows)))

    def close(self) -> None:
        """Write everything still queued, then close the database."""
        self._ops.put(None)
        self._writer.join()
        self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        self._db.close()

    def _write(self) -> None:
        while True:
            ops = [self._ops.get()]
            while True:
                try:
                    ops.append(self._ops.get_nowait())
                except queue.Empty:
                    break
            done = ops[-1] is None
            self._commit([op for op in ops if op is not None])
            if done:
                return

    def _commit(self, ops: list[_Op]) -> None:
        try:
            self._db.execute("BEGIN")
            for sql, params in ops:
                self._db.executemany(sql, params)
            self._db.execute("COMMIT")
        except sqlite3.Error as error:
            # The emulator keeps serving from memory; the operator sees why persistence lags.
            _log.error("journal_write_failed", error=str(error), path=str(self.path))
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
