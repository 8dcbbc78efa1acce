"""What ``plowline-repeater replay`` takes from a dead-end path, and where its results go.

Input objects (names relative to the replayed path), as the repeater writes them::

    YYYY/MM/DD/HH/<UTC timestamp>-<unique>.ndjson   (2026/11/22/05/20261122T051307.250Z-1a2b.ndjson)

Results, each named after its source object so that a run after a crash finds them again::

    replayed/<name>            the source object, once every line of it is settled
    failed/<name>              new loader_recovery_error rows for rows the table refused again
    unrecoverable/<name>       lines that are no failed-insert row at all, as they were
    <stem>.rest.ndjson         rows ``--error-matches`` left out (same time, stays an input)

Notes:
    Pure. ``failed/`` has the input layout itself, so ``replay gs://…/path/failed`` replays
    those rows again later. Objects under ``replayed/``, ``failed/`` and ``unrecoverable/``
    are never inputs; names outside the layout are ignored (reported, never touched).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from plowline_core.badrows import BADROWS_VENDOR, parse_bad_row
from plowline_core.messages import FailedInsert, MessageError, decode_failed_insert

REPLAYED = "replayed/"
FAILED = "failed/"
UNRECOVERABLE = "unrecoverable/"
RESERVED = (REPLAYED, FAILED, UNRECOVERABLE)
"""Top-level folders of a dead-end path that replay writes and never reads."""

_SUFFIX = ".ndjson"
_NAME = re.compile(
    r"^\d{4}/\d{2}/\d{2}/\d{2}/(?P<stamp>\d{8}T\d{6})(?P<fraction>\.\d{1,6})?Z-[^/]+\.ndjson$"
)
_RECOVERY_SCHEMA = "loader_recovery_error"


def parse_moment(text: str) -> datetime | None:
    """Read an ISO-8601 date or date-time as an aware UTC datetime (naive means UTC), else None."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


@dataclass(frozen=True, slots=True)
class TimeWindow:
    """Object times to take: ``since`` included, ``until`` excluded (None: no bound)."""

    since: datetime | None = None
    until: datetime | None = None

    def contains(self, moment: datetime) -> bool:
        """Say whether an object written at ``moment`` is in the window."""
        if self.since is not None and moment < self.since:
            return False
        return self.until is None or moment < self.until


@dataclass(frozen=True, slots=True)
class DeadEndObject:
    """A dead-end object to read: its name (relative to the path) and when it was written."""

    name: str
    time: datetime


@dataclass(frozen=True, slots=True)
class Selection:
    """The objects of a dead-end path, sorted: to replay, outside the window, and ignored."""

    chosen: tuple[DeadEndObject, ...]
    outside: tuple[str, ...]
    ignored: tuple[str, ...]


def object_time(name: str) -> datetime | None:
    """Return when a dead-end object was written, from its name; None outside the layout."""
    match = _NAME.match(name)
    if match is None:
        return None
    stamp = datetime.strptime(match["stamp"], "%Y%m%dT%H%M%S").replace(tzinfo=UTC)
    fraction = match["fraction"]
    if fraction:
        stamp = stamp.replace(microsecond=int(fraction[1:].ljust(6, "0")))
    return stamp


def select_objects(names: Iterable[str], window: TimeWindow) -> Selection:
    """Sort a path's object names into those to replay, those outside the window, the rest."""
    chosen: list[DeadEndObject] = []
    outside: list[str] = []
    ignored: list[str] = []
    for name in sorted(names):
        if name.startswith(RESERVED):
            continue
        moment = object_time(name)
        if moment is None:
            ignored.append(name)
        elif window.contains(moment):
            chosen.append(DeadEndObject(name, moment))
        else:
            outside.append(name)
    return Selection(tuple(chosen), tuple(outside), tuple(ignored))


@dataclass(frozen=True, slots=True)
class Replayable:
    """A failed-insert row to put back, with the error message its bad row carried."""

    failed: FailedInsert
    error: str


@dataclass(frozen=True, slots=True)
class Unrecoverable:
    """A line that holds no failed-insert row, and why."""

    line: bytes
    why: str


@dataclass(frozen=True, slots=True)
class ObjectPlan:
    """What to do with one object's lines: replay, file as unrecoverable, or keep."""

    source: DeadEndObject
    rows: tuple[Replayable, ...]
    unrecoverable: tuple[Unrecoverable, ...]
    kept: tuple[bytes, ...]

    @property
    def name(self) -> str:
        """The source object's name."""
        return self.source.name

    @property
    def has_work(self) -> bool:
        """Say whether the object is touched at all (rows to replay or lines to file away)."""
        return bool(self.rows or self.unrecoverable)


def classify_line(
    line: bytes, matcher: re.Pattern[str] | None
) -> Replayable | Unrecoverable | None:
    """Read one dead-end line; None means a recoverable row that ``matcher`` leaves out."""
    parsed = parse_bad_row(line)
    if parsed is None:
        return Unrecoverable(line, "not a self-describing bad row")
    key, data = parsed
    if key.vendor != BADROWS_VENDOR or key.name != _RECOVERY_SCHEMA:
        return Unrecoverable(line, f"a {key.name} bad row, not {_RECOVERY_SCHEMA}")
    payload = data.get("payload")
    if not isinstance(payload, str):
        return Unrecoverable(line, "its payload is not a string")
    failed = decode_failed_insert(payload.encode())
    if isinstance(failed, MessageError):
        return Unrecoverable(line, failed.message)
    error = _error_message(data)
    if matcher is not None and matcher.search(error) is None:
        return None
    return Replayable(failed, error)


def plan_object(source: DeadEndObject, body: bytes, matcher: re.Pattern[str] | None) -> ObjectPlan:
    """Sort an object's lines (blank lines skipped) into rows, unrecoverable lines and kept ones."""
    rows: list[Replayable] = []
    unrecoverable: list[Unrecoverable] = []
    kept: list[bytes] = []
    for line in body.split(b"\n"):
        line = line.removesuffix(b"\r")
        if not line.strip():
            continue
        outcome = classify_line(line, matcher)
        if outcome is None:
            kept.append(line)
        elif isinstance(outcome, Unrecoverable):
            unrecoverable.append(outcome)
        else:
            rows.append(outcome)
    return ObjectPlan(source, tuple(rows), tuple(unrecoverable), tuple(kept))


def ndjson(lines: Sequence[bytes]) -> bytes:
    """Return lines as an NDJSON object body."""
    return b"".join(line + b"\n" for line in lines)


def replayed_name(name: str) -> str:
    """Return where a replayed source object is moved."""
    return REPLAYED + name


def failed_name(name: str) -> str:
    """Return the object of the rows of ``name`` that the table refused again."""
    return FAILED + name


def unrecoverable_name(name: str) -> str:
    """Return the object of the lines of ``name`` that are no failed-insert row."""
    return UNRECOVERABLE + name


def kept_name(name: str) -> str:
    """Return the object of the rows of ``name`` that ``--error-matches`` left out."""
    return name.removesuffix(_SUFFIX) + ".rest" + _SUFFIX


def alternative_names(name: str) -> Iterator[str]:
    """Yield ``name``, then ``<stem>.2.ndjson``, ``<stem>.3.ndjson``… (when a name is taken)."""
    yield name
    stem = name.removesuffix(_SUFFIX)
    number = 2
    while True:
        yield f"{stem}.{number}{_SUFFIX}"
        number += 1


def _error_message(data: Mapping[str, Any]) -> str:
    failure = data.get("failure")
    error = failure.get("error") if isinstance(failure, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return message if isinstance(message, str) else ""
