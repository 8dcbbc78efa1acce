"""Cast entity JSON to the BigQuery-JSON value of a Field, collecting every problem.

A *caster* is compiled once per ``(Field, ColumnMode)`` and cached: a closure
``caster(value, errors) -> bigquery_value`` that appends ``CastError``s to ``errors``
instead of raising. When ``errors`` grew, the returned value is meaningless.

Rules (``ColumnMode.FULL``, loader 0.x/1.x, schema-ddl ``bigquery.Row``):
    STRING takes any JSON (non-strings as compact JSON text); BOOLEAN only booleans;
    INTEGER only integral numbers in int64; FLOAT/NUMERIC any number; TIMESTAMP/DATE any
    string. RECORD drops unknown keys and emits the normalised field names in Field
    order; a missing NULLABLE or REPEATED key gives null, a missing REQUIRED key
    ``MissingInValue``; a null in REQUIRED gives ``WrongType(null, T)``. REPEATED turns
    JSON null into ``[]``, drops null items, and a non-array is ``NotAnArray``.

``ColumnMode.MAJOR`` follows loader 2.x where it differs: WrongType's ``expected`` is 2.x's
type name (``String``, ``Long``, ``Double``…, ``scalar.V2_TYPE_NAMES``), STRING takes strings only,
JSON takes anything as JSON text (strings quoted, null in REQUIRED → ``"null"``),
TIMESTAMP must be ISO-8601 with an offset (emitted as UTC ISO, not epoch micros, because
insertAll takes strings) and DATE an ISO date, a missing REQUIRED key is ``WrongType(null, T)``.

Notes:
    Pure. A RECORD looks a JSON key up by its raw name first, then by its normalised
    name (so sub-fields may carry raw or normalised names). When two keys land on one
    sub-field (``XYZ`` and ``xyz``) the first value that casts cleanly wins, as in v2.
    Speed: each RECORD caster is also compiled to straight-line code (``exec``, as
    dataclasses does) for objects keyed by raw names only; anything else takes the walk.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any, NamedTuple

from plowline_core.schema.entity import ColumnMode
from plowline_core.schema.field import Field, FieldType, Mode
from plowline_core.schema.names import normalize_field_name
from plowline_core.transform.codegen import MISSING, specialised_record
from plowline_core.transform.problems import (
    Caster,
    CastError,
    MissingInValue,
    NotAnArray,
    WrongType,
)
from plowline_core.transform.scalar import (
    INT64_MAX,
    SCALAR_CASTERS,
    compact_json,
    decimal_caster,
    expected_name,
    expected_of,
    is_decimal,
    stored_as_number,
)

__all__ = [
    "CastError",
    "CastOutcome",
    "Caster",
    "MissingInValue",
    "NotAnArray",
    "WrongType",
    "cast",
    "caster_for",
    "compact_json",
    "element_caster_for",
]

_LEARNED_KEYS_CAP = 4096  # raw JSON keys remembered per RECORD; beyond that, normalise each time


class CastOutcome(NamedTuple):
    """The result of ``cast``: the BigQuery value and every problem found (empty if good)."""

    value: Any
    errors: tuple[CastError, ...]


def cast(field: Field, value: Any, mode: ColumnMode = ColumnMode.FULL) -> CastOutcome:
    """Cast one JSON value to the BigQuery value of ``field``."""
    errors: list[CastError] = []
    result = caster_for(field, mode)(value, errors)
    return CastOutcome(None if errors else result, tuple(errors))


@lru_cache(maxsize=8192)
def caster_for(field: Field, mode: ColumnMode = ColumnMode.FULL) -> Caster:
    """Return the compiled caster of a field, honouring its mode (present null included)."""
    if field.mode is Mode.REPEATED:
        return _repeated(field, mode)
    value_caster = _non_null_caster(field, mode)
    if field.mode is Mode.NULLABLE:

        def nullable(value: Any, errors: list[CastError]) -> Any:
            return None if value is None else value_caster(value, errors)

        return nullable
    if field.type is FieldType.JSON and mode is ColumnMode.MAJOR:

        def required_json(value: Any, errors: list[CastError]) -> Any:
            return "null" if value is None else value_caster(value, errors)

        return required_json
    expected = expected_of(field, mode)

    def required(value: Any, errors: list[CastError]) -> Any:
        if value is None:
            errors.append(WrongType(None, expected))
            return None
        return value_caster(value, errors)

    return required


def element_caster_for(field: Field, mode: ColumnMode = ColumnMode.FULL) -> Caster:
    """Return the caster of one non-null item of a REPEATED field (or of the field itself)."""
    return _non_null_caster(field, mode)


@lru_cache(maxsize=8192)
def _non_null_caster(field: Field, mode: ColumnMode) -> Caster:
    if field.type is FieldType.RECORD:
        return _record(field, mode)
    if is_decimal(field, mode) and field.precision is not None and field.scale is not None:
        return decimal_caster(field.precision, field.scale)
    return SCALAR_CASTERS[mode].get(field.type, SCALAR_CASTERS[mode][FieldType.STRING])


def _repeated(field: Field, mode: ColumnMode) -> Caster:
    item = _non_null_caster(field, mode)
    expected = expected_of(field, mode)

    def repeated(value: Any, errors: list[CastError]) -> Any:
        if value is None:
            return []
        if type(value) is not list:
            errors.append(NotAnArray(value, expected))
            return None
        return [item(element, errors) for element in value if element is not None]

    return repeated


def _record(field: Field, mode: ColumnMode) -> Caster:
    subs = field.fields
    names = tuple(normalize_field_name(sub.name) for sub in subs)
    raw_names = tuple(sub.name for sub in subs)
    casters = tuple(caster_for(sub, mode) for sub in subs)
    # Value types stored as they are (no call): str in a STRING, None in a NULLABLE…
    as_is = tuple(_as_is_types(sub, mode) for sub in subs)
    required = tuple(sub.mode is Mode.REQUIRED for sub in subs)
    # A NULLABLE value that is not stored as is cannot be null: skip the null check.
    direct = tuple(
        _non_null_caster(sub, mode) if sub.mode is Mode.NULLABLE else caster
        for sub, caster in zip(subs, casters, strict=True)
    )
    specs = tuple(zip(names, raw_names, direct, as_is, required, strict=True))
    major = mode is ColumnMode.MAJOR
    record_name = expected_name(FieldType.RECORD, mode)

    def missing(index: int, value: dict[str, Any], errors: list[CastError]) -> Any:
        if not required[index]:
            return None
        if major:
            return casters[index](None, errors)
        errors.append(MissingInValue(raw_names[index], value))
        return None

    by_key = _by_key(raw_names, names, casters, direct, as_is, missing)
    plain_types = tuple(_plain_types(sub, mode) for sub in subs)
    numeric_at = tuple(i for i, sub in enumerate(subs) if stored_as_number(sub, mode))

    def record(value: Any, errors: list[CastError]) -> Any:
        if type(value) is not dict:
            errors.append(WrongType(value, record_name))
            return None
        get = value.get
        # Fastest path, all in C: every sub-field holds a value stored as is, numbers
        # within int64 (a sum of magnitudes bounds each one; inf and NaN fail it), and
        # the raw names account for every key of the object.
        items = list(map(get, raw_names))
        if (
            all(map(_contains, plain_types, map(type, items)))
            and sum(map(value.__contains__, raw_names)) == len(value)
            and (
                not numeric_at
                or sum(map(abs, filter(None, map(items.__getitem__, numeric_at)))) <= INT64_MAX
            )
        ):
            return dict(zip(names, items, strict=True))
        # Fast path: look each sub-field up by its raw name. When that accounts for every
        # key of the object, no other key can match by normalised name: done.
        mark = len(errors)
        out: dict[str, Any] = {}
        found = 0
        for index, (name, raw, caster, plain, strict) in enumerate(specs):
            item = get(raw, MISSING)
            if item is MISSING:
                if strict:
                    out[name] = missing(index, value, errors)
                else:
                    out[name] = None
            else:
                found += 1
                out[name] = item if type(item) in plain else caster(item, errors)
        if found == len(value):
            return out
        del errors[mark:]
        return by_key(value, errors)

    return specialised_record(subs, names, direct, as_is, record) or record


def _by_key(
    raw_names: tuple[str, ...],
    names: tuple[str, ...],
    casters: tuple[Caster, ...],
    direct: tuple[Caster, ...],
    as_is: tuple[frozenset[type], ...],
    missing: Callable[[int, dict[str, Any], list[CastError]], Any],
) -> Caster:
    """Return the general RECORD walk: every key of the object matched by raw or normalised name."""
    width = len(raw_names)
    by_normalised: dict[str, int] = {}
    for index, name in enumerate(names):
        by_normalised.setdefault(name, index)
    slot_of: dict[str, int] = {name: index for index, name in enumerate(raw_names)}

    def slot(key: str) -> int:
        index = by_normalised.get(normalize_field_name(key), -1) if type(key) is str else -1
        if len(slot_of) < _LEARNED_KEYS_CAP:
            slot_of[key] = index
        return index

    def record(value: dict[str, Any], errors: list[CastError]) -> Any:
        values: list[Any] = [MISSING] * width
        clashes: dict[int, list[tuple[str, Any]]] | None = None
        for key, item in value.items():
            index = slot_of.get(key)
            if index is None:
                index = slot(key)
            if index < 0:
                continue
            if values[index] is MISSING:
                values[index] = item
            else:
                clashes = _note_clash(clashes, index, key, item, value, raw_names[index])
        out: dict[str, Any] = {}
        for index in range(width):
            item = values[index]
            if item is MISSING:
                out[names[index]] = missing(index, value, errors)
            elif clashes is not None and index in clashes:
                out[names[index]] = _first_clean(casters[index], clashes[index], errors)
            elif type(item) in as_is[index]:
                out[names[index]] = item
            else:
                out[names[index]] = direct[index](item, errors)
        return out

    return record


def _note_clash(
    clashes: dict[int, list[tuple[str, Any]]] | None,
    index: int,
    key: str,
    item: Any,
    obj: dict[str, Any],
    raw_name: str,
) -> dict[int, list[tuple[str, Any]]]:
    """Record a second key landing on one sub-field; the exact raw name is tried first."""
    clashes = {} if clashes is None else clashes
    if index not in clashes:
        first_key = next(k for k in obj if k != key and _same_slot(k, raw_name))
        clashes[index] = [(first_key, obj[first_key])]
    clashes[index].append((key, item))
    clashes[index].sort(key=lambda pair: pair[0] != raw_name)
    return clashes


def _same_slot(key: str, raw_name: str) -> bool:
    return key == raw_name or normalize_field_name(key) == normalize_field_name(raw_name)


def _first_clean(caster: Caster, candidates: list[tuple[str, Any]], errors: list[CastError]) -> Any:
    """Return the first candidate that casts without error; else report the first one's errors."""
    first_errors: list[CastError] | None = None
    first_value: Any = None
    for _, item in candidates:
        attempt: list[CastError] = []
        result = caster(item, attempt)
        if not attempt:
            return result
        if first_errors is None:
            first_errors, first_value = attempt, result
    errors.extend(first_errors or ())
    return first_value


def _as_is_types(field: Field, mode: ColumnMode) -> frozenset[type]:
    """Return the value types a field stores unchanged (checked before calling its caster)."""
    if field.mode is Mode.REPEATED:
        return frozenset()  # null becomes [] and items are filtered: always walk
    kinds: set[type] = {type(None)} if field.mode is Mode.NULLABLE else set()
    if field.type is FieldType.BOOLEAN:
        kinds.add(bool)
    elif field.type is FieldType.STRING or (
        mode is ColumnMode.FULL
        and field.type in (FieldType.TIMESTAMP, FieldType.DATE, FieldType.JSON)
    ):
        kinds.add(str)
    return frozenset(kinds)


_contains = frozenset.__contains__


def _plain_types(field: Field, mode: ColumnMode) -> frozenset[type]:
    """Return the value types a field stores unchanged, numbers assumed within int64."""
    kinds = _as_is_types(field, mode)
    if field.mode is Mode.REPEATED:
        return kinds
    if field.type is FieldType.INTEGER:
        return kinds | {int}
    if stored_as_number(field, mode):
        return kinds | {int, float}
    return kinds
