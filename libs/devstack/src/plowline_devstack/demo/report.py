"""What the systems hold after a demo run, read from them, and whether every event is accounted for.

:class:`SystemsReader` asks BigQuery (``COUNT``, ``COUNT(DISTINCT event_id)``, the event
ids, the table schema, sample queries) and Cloud Storage (the bad-row and dead-end
objects, one bad row per NDJSON line) with the official clients. :class:`Accounting`
puts each published event id in its place: a table row, a bad row or a dead-end row, and
checks the events meant never to fit (``demo/conflict.py``) are the dead-ended ones.

Notes:
    A bad row or a dead-end row is matched to a published event by the event id text it
    carries (a parsing-error bad row holds the raw line; an Iglu error holds the fields).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from plowline_cloud.clients import bigquery_client, storage_client
from plowline_core.schema.field import Field

from plowline_devstack.bigquery_retry import BIGQUERY_RETRY
from plowline_devstack.stack.lifecycle import LocalStack

_UUID = re.compile(rb"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_TIMEOUT_S = 20.0
_DEAD_END_SHOWN = 25


@dataclass(frozen=True, slots=True)
class Objects:
    """Bad rows found under a bucket prefix: how many, and the event ids they name.

    ``ids`` holds each id once per bad row that names it, so an event filed twice shows twice.
    """

    objects: int
    rows: int
    ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class DeadEndRow:
    """One line of a dead-end object: the event it holds, why it was refused, the bad row."""

    event_id: str | None
    message: str
    bad_row: dict[str, Any]


class SystemsReader:
    """Read the events table and the buckets of a local stack with the official clients."""

    def __init__(self, stack: LocalStack) -> None:
        self._stack = stack
        self._bigquery = bigquery_client(stack.endpoints.project, stack.endpoints.bigquery_url)
        self._storage = storage_client(stack.endpoints.project, stack.endpoints.storage_url)
        self._cache: dict[tuple[str, str, int], bytes] = {}

    def close(self) -> None:
        """Close the clients."""
        self._bigquery.close()  # type: ignore[no-untyped-call]  # the client's close is untyped

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        """Run ``sql`` and return its rows as tuples."""
        job = self._bigquery.query(sql, retry=BIGQUERY_RETRY, job_retry=None, timeout=_TIMEOUT_S)
        return [tuple(row.values()) for row in job.result(timeout=_TIMEOUT_S)]

    def row_counts(self) -> tuple[int, int]:
        """Return ``(COUNT(*), COUNT(DISTINCT event_id))`` of the events table."""
        rows = self.query(
            f"SELECT COUNT(*), COUNT(DISTINCT event_id) FROM `{self._stack.table_ref}`"
        )
        return int(rows[0][0]), int(rows[0][1])

    def row_ids(self) -> list[str]:
        """Return the event id of every row of the events table (duplicates included)."""
        return [
            str(row[0]) for row in self.query(f"SELECT event_id FROM `{self._stack.table_ref}`")
        ]

    def duplicate_copies(self) -> dict[str, tuple[int, float]]:
        """Return, per event id held more than once: its copies, seconds between their load_tstamps."""
        sql = (
            "SELECT event_id, COUNT(*), "
            "TIMESTAMP_DIFF(MAX(load_tstamp), MIN(load_tstamp), MILLISECOND) "
            f"FROM `{self._stack.table_ref}` GROUP BY event_id HAVING COUNT(*) > 1"
        )
        return {
            str(event_id): (int(copies), float(spread or 0) / 1000.0)
            for event_id, copies, spread in self.query(sql)
        }

    def columns(self) -> list[str]:
        """Return the events table's top-level column names, in order."""
        table = self._bigquery.get_table(
            self._stack.table_ref, retry=BIGQUERY_RETRY, timeout=_TIMEOUT_S
        )
        return [column.name for column in table.schema]

    def fields(self) -> tuple[Field, ...]:
        """Return the events table's schema as our fields."""
        table = self._bigquery.get_table(
            self._stack.table_ref, retry=BIGQUERY_RETRY, timeout=_TIMEOUT_S
        )
        return tuple(Field.from_api(column.to_api_repr()) for column in table.schema)

    def bad_rows(self, bucket: str, prefix: str) -> Objects:
        """Return the bad rows under ``gs://bucket/prefix``: one per NDJSON line, one per ``.bin``."""
        objects = rows = 0
        ids: list[str] = []
        for name, data in self._objects(bucket, prefix):
            objects += 1
            lines = [data] if name.endswith(".bin") else data.splitlines()
            rows += len(lines)
            for line in lines:
                ids += sorted({match.decode().lower() for match in _UUID.findall(line)})
        return Objects(objects, rows, tuple(ids))

    def dead_end_rows(self, bucket: str, prefix: str) -> list[DeadEndRow]:
        """Return every ``loader_recovery_error`` line under ``gs://bucket/prefix``, parsed."""
        found: list[DeadEndRow] = []
        for _, data in self._objects(bucket, prefix):
            found += [dead_end_row(line) for line in data.splitlines() if line.strip()]
        return found

    def _objects(self, bucket: str, prefix: str) -> Iterator[tuple[str, bytes]]:
        for blob in self._storage.list_blobs(bucket, prefix=prefix, timeout=_TIMEOUT_S):
            key = (bucket, str(blob.name), int(blob.size or 0))
            data = self._cache.get(key)
            if data is None:
                data = self._cache[key] = blob.download_as_bytes(timeout=_TIMEOUT_S)
            yield str(blob.name), data

    def sample(self, sql: str) -> tuple[list[tuple[Any, ...]], str | None]:
        """Run a sample query; return its rows, or no rows and the error it raised."""
        try:
            return self.query(sql), None
        except Exception as error:  # a sample is an illustration: show why it failed, go on
            return [], f"{type(error).__name__}: {str(error)[:200]}"


def dead_end_row(line: bytes) -> DeadEndRow:
    """Parse one dead-end NDJSON line (the event id is the payload row's ``event_id``)."""
    bad_row: dict[str, Any] = json.loads(line)
    data = bad_row.get("data") or {}
    error = (data.get("failure") or {}).get("error") or {}
    return DeadEndRow(
        _payload_event_id(str(data.get("payload", ""))), str(error.get("message", "")), bad_row
    )


def _payload_event_id(payload: str) -> str | None:
    try:
        row = json.loads(payload)
    except ValueError:  # a ParsingError payload is whatever the message held
        row = None
    if isinstance(row, dict) and isinstance(row.get("event_id"), str):
        return str(row["event_id"]).lower()
    match = _UUID.search(payload.encode())
    return match.group().decode().lower() if match else None


@dataclass(frozen=True, slots=True)
class Accounting:
    """Where each published event ended up, and whether each is in exactly one right place.

    Notes:
        The verdict is :attr:`exact`: every good event one row (or, for the events meant never
        to fit, one dead-end row), every malformed line one bad row, no id twice anywhere.
        :attr:`balanced` is the weaker placement check (each id somewhere right, duplicates
        allowed) that diagnostics use.
    """

    good: frozenset[str]
    bad: frozenset[str]
    in_table: frozenset[str]
    in_bad_rows: frozenset[str]
    dead_ended: frozenset[str]
    duplicates: int = 0
    never_fit: frozenset[str] = frozenset()
    duplicate_bad_rows: int = 0
    duplicate_dead_ends: int = 0

    @classmethod
    def of(
        cls,
        good: Iterable[str],
        bad: Iterable[str],
        table_ids: Sequence[str],
        bad_row_ids: Iterable[str],
        dead_end_ids: Iterable[str],
        never_fit: Iterable[str] = (),
    ) -> Accounting:
        """Build the accounting of published ``good``/``bad`` ids against what the systems hold.

        ``table_ids`` has one id per row, ``bad_row_ids`` and ``dead_end_ids`` one per bad row
        naming it (ids never published, such as context ids, are ignored); ``never_fit`` names
        the good events bound for the dead-end bucket.
        """
        good, bad = frozenset(good), frozenset(bad)
        published = good | bad
        in_table = frozenset(table_ids)
        bad_rows = Counter(i for i in bad_row_ids if i in published)
        dead_ends = Counter(i for i in dead_end_ids if i in published)
        return cls(
            good,
            bad,
            in_table,
            frozenset(bad_rows),
            frozenset(dead_ends),
            len(table_ids) - len(in_table),
            frozenset(never_fit) & good,
            bad_rows.total() - len(bad_rows),
            dead_ends.total() - len(dead_ends),
        )

    @property
    def published(self) -> frozenset[str]:
        """Every event id sent."""
        return self.good | self.bad

    @property
    def missing(self) -> frozenset[str]:
        """Published ids found nowhere."""
        return self.published - self.in_table - self.in_bad_rows - self.dead_ended

    @property
    def unexpected(self) -> frozenset[str]:
        """Table rows whose event id was never published."""
        return self.in_table - self.published

    @property
    def misplaced(self) -> frozenset[str]:
        """Ids in more than one place, good events as bad rows, bad or never-fitting ones as rows."""
        twice = (
            (self.in_table & self.in_bad_rows)
            | (self.in_table & self.dead_ended)
            | (self.in_bad_rows & self.dead_ended)
        )
        astray = (self.good & self.in_bad_rows) | (self.bad & self.in_table)
        return twice | astray | (self.never_fit & (self.in_table | self.in_bad_rows))

    @property
    def dead_ended_fitting(self) -> frozenset[str]:
        """Regular events (not meant never to fit) that were dead-ended instead of loaded."""
        return self.dead_ended - self.never_fit

    @property
    def all_duplicates(self) -> int:
        """Extra copies of any event: table rows, bad rows and dead-end rows sharing an id."""
        return self.duplicates + self.duplicate_bad_rows + self.duplicate_dead_ends

    @property
    def exact(self) -> bool:
        """True when each event is in exactly one right place, once: the demo's PASS."""
        return (
            self.balanced
            and self.all_duplicates == 0
            and self.in_table == self.good - self.never_fit
            and self.in_bad_rows == self.bad
            and self.dead_ended == self.never_fit
        )

    @property
    def balanced(self) -> bool:
        """True when published = rows + bad rows + dead-ended, duplicates allowed."""
        placed = len(self.in_table) + len(self.in_bad_rows) + len(self.dead_ended)
        return (
            not self.missing
            and not self.unexpected
            and not self.misplaced
            and len(self.published) == placed
        )


@dataclass(slots=True)
class Summary:
    """The figures the demo prints at the end, all read from the systems."""

    published: int
    rows: int
    distinct_rows: int
    bad_rows: int
    bad_row_objects: int
    dead_ended: int
    columns_added: list[str]
    reinserted: float | None
    mutator_columns: float | None
    accounting: Accounting
    samples: list[tuple[str, list[tuple[Any, ...]], str | None]] = field(default_factory=list)
    dead_end_rows: list[DeadEndRow] = field(default_factory=list)
    conflict: str | None = None
    placement: list[str] = field(default_factory=list)  # where the loader ran (demo_cluster)

    def lines(self) -> list[str]:
        """Return the summary as printed lines, the PASS/FAIL verdict last."""
        acc = self.accounting
        out = [
            f"events published                         {self.published:>7}",
            f"rows in BigQuery (COUNT)                 {self.rows:>7}",
            f"rows in BigQuery (COUNT DISTINCT id)     {self.distinct_rows:>7}",
            f"bad rows in the dead-letter bucket       {self.bad_rows:>7}"
            f"   ({self.bad_row_objects} objects)",
            f"dead-ended rows (dead-end bucket)        {self.dead_ended:>7}",
            *self._dead_end_lines(),
            f"failed inserts recovered by the repeater {_figure(self.reinserted):>7}",
            f"columns added by the mutator             {len(self.columns_added):>7}"
            f"   (mutator says {_figure(self.mutator_columns)})",
        ]
        out += [f"    + {name}" for name in self.columns_added]
        for title, rows, error in self.samples:
            out.append(f"sample: {title}")
            out += [f"    {error}"] if error else [f"    {_row(row)}" for row in rows[:8]]
        out += self.placement
        verdict = "PASS" if acc.exact else "FAIL"
        out.append(
            f"{verdict}: published {len(acc.published)} = rows {len(acc.in_table)} + bad rows "
            f"{len(acc.in_bad_rows)} + dead-ended {len(acc.dead_ended)}"
            f" (missing {len(acc.missing)}, misplaced {len(acc.misplaced)}, "
            f"unexpected {len(acc.unexpected)}, dead-ended but could fit "
            f"{len(acc.dead_ended_fitting)}, duplicate rows {acc.duplicates}, "
            f"duplicate bad rows {acc.duplicate_bad_rows}, "
            f"duplicate dead-ends {acc.duplicate_dead_ends})"
        )
        return out

    def _dead_end_lines(self) -> list[str]:
        out: list[str] = []
        if self.conflict:
            out.append(f"    never fits: {self.conflict}")
            out.append("    (the mutator only widens, never retypes: the repeater gives up)")
        rows = sorted(self.dead_end_rows, key=lambda row: row.event_id or "")
        expected = self.accounting.never_fit
        for row in rows[:_DEAD_END_SHOWN]:
            tag = "never fits" if row.event_id in expected else "UNEXPECTED"
            out.append(f"    - {row.event_id or '(no event id)'}  {tag}: {row.message[:72]}")
        if len(rows) > _DEAD_END_SHOWN:
            out.append(f"    … and {len(rows) - _DEAD_END_SHOWN} more")
        return out


def _figure(value: float | None) -> str:
    return "?" if value is None else f"{value:.0f}"


def _row(row: tuple[Any, ...]) -> str:
    return "  ".join(f"{value!s:<44}" if i == 0 else f"{value!s:>8}" for i, value in enumerate(row))


def sample_queries(table_ref: str, columns: Sequence[str]) -> list[tuple[str, str]]:
    """Return ``(title, sql)`` of the sample queries the table's columns allow."""
    table = f"`{table_ref}`"
    queries = [
        (
            "page views per browser",
            f"SELECT br_family, COUNT(*) AS page_views FROM {table} "
            "WHERE event_name = 'page_view' GROUP BY br_family ORDER BY page_views DESC, br_family",
        )
    ]
    clicks = [c for c in columns if "link_click" in c]
    if clicks:
        target = f"COALESCE({', '.join(f'{c}.target_url' for c in clicks)})"
        queries.append(
            (
                "link clicks by target",
                f"SELECT {target} AS target, COUNT(*) AS clicks FROM {table} "
                "WHERE event_name = 'link_click' GROUP BY target ORDER BY clicks DESC, target",
            )
        )
    checkout = next((c for c in columns if "checkout_started" in c), None)
    if checkout:
        queries.append(
            (
                "checkouts started by currency (count, revenue)",
                f"SELECT {checkout}.currency AS currency, COUNT(*) AS checkouts, "
                f"ROUND(SUM({checkout}.total), 2) AS revenue FROM {table} "
                f"WHERE {checkout} IS NOT NULL GROUP BY currency ORDER BY currency",
            )
        )
    return queries
