"""The widening plan: which columns and nested fields a table lacks, and nothing else.

BigQuery lets ``tables.patch`` add NULLABLE or REPEATED columns and nested fields, and
relax REQUIRED to NULLABLE; it never lets a type change. The mutator therefore only
*adds*: a needed field whose type or mode disagrees with the table is reported as a
``Conflict`` and left alone (widening only, see docs/decisions.md, 6). A column of a type plowline
does not write (BYTES, DATETIME, GEOGRAPHY, RANGE, a type unknown here…) is never widened
into: a need of the same name is a conflict, and the column goes back as BigQuery gave it
(options included) in ``schema``.

Notes:
    Names match case-insensitively, as BigQuery column names do.
    Pure and idempotent: planning ``needed`` against ``plan.schema`` yields no additions
    and no conflicts.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from plowline_core.schema.field import Field, FieldType, Mode

try:
    from plowline_core.schema._row_check import all_known as _all_known
except ImportError:  # a source tree nobody built: the Python walk answers alone
    NATIVE = False
else:
    NATIVE = True


@dataclass(frozen=True, slots=True)
class Conflict:
    """A needed field the table has under another type or an incompatible mode."""

    path: str
    table: Field
    needed: Field

    @property
    def reason(self) -> str:
        """Say what differs, for logs and the HTTP API."""
        table, needed = self.table, self.needed
        if table.type is not needed.type:
            return f"{self.path}: table has {table.type_name}, schema needs {needed.type_name}"
        return f"{self.path}: table mode {table.mode.value}, schema needs {needed.mode.value}"


@dataclass(frozen=True, slots=True)
class WideningPlan:
    """What one ``tables.patch`` must add, and the whole schema to send with it."""

    additions: tuple[Field, ...]
    nested_additions: tuple[tuple[str, Field], ...]
    schema: tuple[Field, ...]
    conflicts: tuple[Conflict, ...]

    @property
    def is_empty(self) -> bool:
        """Return True when the table already has every needed field."""
        return not self.additions and not self.nested_additions


@dataclass(slots=True)
class _Plan:
    additions: list[Field]
    nested: list[tuple[str, Field]]
    conflicts: list[Conflict]


def plan_widening(table: Sequence[Field], needed: Sequence[Field]) -> WideningPlan:
    """Return the additions that make ``table`` hold every ``needed`` field.

    Notes:
        New top-level columns are added NULLABLE (REQUIRED relaxed; REPEATED kept); new
        sub-fields inside existing RECORDs are added NULLABLE the same way, since BigQuery
        only allows adding NULLABLE or REPEATED fields. ``schema`` keeps the table's fields
        in order, appends new sub-fields at the end of their record and new columns last.
    """
    plan = _Plan([], [], [])
    merged = _merge(tuple(table), needed, "", plan)
    return WideningPlan(
        additions=tuple(plan.additions),
        nested_additions=tuple(plan.nested),
        schema=merged,
        conflicts=tuple(plan.conflicts),
    )


def _merge(
    existing: tuple[Field, ...], wanted: Sequence[Field], parent: str, plan: _Plan
) -> tuple[Field, ...]:
    fields = list(existing)
    index = {field.name.lower(): pos for pos, field in enumerate(fields)}
    for need in wanted:
        path = f"{parent}.{need.name}" if parent else need.name
        pos = index.get(need.name.lower())
        if pos is None:
            added = _addable(need)
            index[need.name.lower()] = len(fields)
            fields.append(added)
            if parent:
                plan.nested.append((parent, added))
            else:
                plan.additions.append(added)
            continue
        have = fields[pos]
        if have.type is not need.type or not _mode_fits(have.mode, need.mode):
            plan.conflicts.append(Conflict(path, have, need))
            continue
        if have.type is FieldType.RECORD:
            subs = _merge(have.fields, need.fields, path, plan)
            if subs != have.fields:
                fields[pos] = have.with_fields(subs)
    return tuple(fields)


def _addable(field: Field) -> Field:
    return field.with_mode(Mode.NULLABLE) if field.mode is Mode.REQUIRED else field


def _mode_fits(have: Mode, need: Mode) -> bool:
    # A NULLABLE column holds REQUIRED data; REPEATED never mixes with the other two.
    return have is need or (have is Mode.NULLABLE and need is Mode.REQUIRED)


# -- rows against the table ---------------------------------------------------------------


class _Checker(NamedTuple):
    """A table schema compiled for checking rows against it."""

    names: dict[str, _Checker | None]  # lower-case field name → its RECORD's checker, or None
    records: frozenset[str]  # the names of RECORD fields


_CACHE_SIZE = 32
_ABSENT: Any = object()
_checkers: dict[int, tuple[object, _Checker]] = {}


def missing_fields(table_fields: Sequence[Field], row: Mapping[str, Any]) -> list[str]:
    """Return the dotted paths of the row's keys that the table schema lacks, in row order.

    Notes:
        Walks RECORD values (objects) and REPEATED RECORD values (arrays of objects); a
        path appears once however many array items carry it. The compiled checker is
        cached by the identity of ``table_fields``: pass the same tuple for every row.
        Speed (the per-row hot path): the C ``all_known`` answers the common row, every key known, in
        a third of the walk's time; it says True only where the walk finds nothing
        (``_row_check.c``), and anything else is walked here, the reference.
    """
    checker = _checker_for(table_fields)
    if NATIVE and _all_known(checker, row):
        return []
    return _walked(checker, row)


def with_missing_fields(
    table_fields: Sequence[Field], rows: Iterable[Mapping[str, Any]]
) -> list[int]:
    """Return the positions of the rows ``missing_fields`` finds a path in (most calls: none).

    Notes:
        ``missing_fields`` over a batch, with the checker looked up once: the per-row
        call and cache lookup were a tenth of the check's time.
    """
    checker = _checker_for(table_fields)
    if NATIVE:
        known = _all_known
        return [
            n for n, row in enumerate(rows) if not known(checker, row) and _walked(checker, row)
        ]
    return [n for n, row in enumerate(rows) if _walked(checker, row)]


def _walked(checker: _Checker, row: Mapping[str, Any]) -> list[str]:
    """Return ``missing_fields``'s answer by the Python walk (the C check's reference)."""
    missing: list[str] = []
    _walk(checker, row, "", missing)
    if len(missing) > 1:
        missing = list(dict.fromkeys(missing))
    return missing


def _checker_for(table_fields: Sequence[Field]) -> _Checker:
    cached = _checkers.get(id(table_fields))
    if cached is not None and cached[0] is table_fields:
        return cached[1]
    checker = _compile(table_fields)
    if len(_checkers) >= _CACHE_SIZE:
        _checkers.clear()  # schemas change rarely; a full reset is simple and thread-safe
    # Holding the object keeps its id from being reused by another schema.
    _checkers[id(table_fields)] = (table_fields, checker)
    return checker


def _compile(fields: Sequence[Field]) -> _Checker:
    # Interned names: a row's keys are mostly interned strings (the transform's constant
    # column names), so a lookup compares pointers, not text: a third of the C check's time.
    names = {
        sys.intern(field.name.lower()): _compile(field.fields)
        if field.type is FieldType.RECORD
        else None
        for field in fields
    }
    return _Checker(names, frozenset(name for name, sub in names.items() if sub is not None))


def _walk(checker: _Checker, row: Mapping[str, Any], parent: str, missing: list[str]) -> None:
    names, records = checker
    if row.keys() <= names.keys():
        # Every key known (compared in C): only RECORD values need a closer look, and
        # only those are visited (a row has ~130 atomic columns and a few entity ones).
        found: dict[str, list[str]] = {}
        for key in records.intersection(row.keys()):
            value = row[key]
            if value is not None:
                paths: list[str] = []
                _walk_value(names[key], value, f"{parent}{key}.", paths)
                if paths:
                    found[key] = paths
        if found:  # rare: report in row order (each record walked once: a walk again
            # per level would cost 2**depth on a deep row with an unknown leaf)
            for key in row:
                missing.extend(found.get(key, ()))
        return
    for key, value in row.items():
        sub = names.get(key, _ABSENT)
        if sub is _ABSENT:
            # Rows carry lower-case names already; fold only on a miss (BigQuery ignores case).
            sub = names.get(str(key).lower(), _ABSENT)
            if sub is _ABSENT:
                missing.append(f"{parent}{key}")
                continue
        if sub is not None and value is not None:
            _walk_value(sub, value, f"{parent}{key}.", missing)


def _walk_value(checker: _Checker | None, value: Any, path: str, missing: list[str]) -> None:
    """Walk the value of a RECORD field: an object, or an array of objects."""
    if checker is None:
        return
    if type(value) is not list:
        if isinstance(value, Mapping):
            _walk(checker, value, path, missing)
        elif isinstance(value, list):
            _walk_items(checker, value, path, missing)
        return
    _walk_items(checker, value, path, missing)


def _walk_items(checker: _Checker, items: list[Any], path: str, missing: list[str]) -> None:
    """Walk the items of a REPEATED RECORD value (objects; anything else is not walked)."""
    names, records = checker
    for item in items:
        if type(item) is dict:
            if not records and item.keys() <= names.keys():
                continue  # the common item: flat, every key known (compared in C)
            _walk(checker, item, path, missing)
        elif isinstance(item, Mapping):
            _walk(checker, item, path, missing)
