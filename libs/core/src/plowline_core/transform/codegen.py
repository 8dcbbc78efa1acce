"""RECORD casters for the common case: in C, or compiled to straight-line Python (``exec``).

The general RECORD walk in :mod:`plowline_core.transform.cast` handles every case; this
module builds, per RECORD field, a caster for the common one (all keys raw sub-field
names, every cast clean) that hands anything else back to the general walk. The caster is
the C extension's ``RecordCaster`` when it was built (the package build always builds
it); ``straight_line_record`` is its reference, generated as ``dataclasses`` does, and the
two answer alike (tests/unit/core/test_transform_record_codegen.py).
"""

from __future__ import annotations

from typing import Any

from plowline_core.schema.field import Field, FieldType, Mode
from plowline_core.transform.problems import Caster
from plowline_core.transform.scalar import INT64_MAX, NUMERIC_TYPES

try:
    from plowline_core.transform import _record_caster as _record
except ImportError:  # a source tree nobody built: the straight-line Python answers
    NATIVE = False
else:
    NATIVE = True


class _Missing:
    """Marks a sub-field whose key is absent from the object."""


MISSING: Any = _Missing()
"""The value of a sub-field whose key is absent from the object."""


def specialised_record(
    subs: tuple[Field, ...],
    names: tuple[str, ...],
    direct: tuple[Caster, ...],
    as_is: tuple[frozenset[type], ...],
    general: Caster,
) -> Caster | None:
    """Return a RECORD caster for the common case (see ``straight_line_record``), or None.

    Notes:
        None when raw names are not distinct strings. The C ``RecordCaster`` when built.
    """
    raw_names = tuple(sub.name for sub in subs)
    if len(set(raw_names)) != len(raw_names) or not all(type(n) is str for n in raw_names):
        return None
    if not NATIVE:
        return straight_line_record(subs, names, direct, as_is, general)
    keep = tuple(_keep_flags(sub, kept) for sub, kept in zip(subs, as_is, strict=True))
    required = tuple(sub.mode is Mode.REQUIRED for sub in subs)
    caster: Caster = _record.RecordCaster(raw_names, names, direct, keep, required, general)
    return caster


def _keep_flags(sub: Field, as_is: frozenset[type]) -> int:
    """Return the C caster's flags of the value types ``sub`` stores as they are.

    Notes:
        The types in ``as_is``, and numbers as ``_kept_test`` keeps them: for a non-REPEATED
        INTEGER an int within int64, for FLOAT/NUMERIC also a finite float; never for a
        decimal with a scale (``Field.scale``: its caster checks the places).
    """
    by_type = {type(None): _record.KEEP_NONE, bool: _record.KEEP_BOOL, str: _record.KEEP_STR}
    flags = 0
    for kind in as_is:
        flags |= by_type[kind]
    if sub.mode is not Mode.REPEATED and sub.type in NUMERIC_TYPES and sub.scale is None:
        flags |= _record.KEEP_INT64
        if sub.type is not FieldType.INTEGER:
            flags |= _record.KEEP_FINITE
    return flags


def straight_line_record(
    subs: tuple[Field, ...],
    names: tuple[str, ...],
    direct: tuple[Caster, ...],
    as_is: tuple[frozenset[type], ...],
    general: Caster,
) -> Caster:
    """Return a RECORD caster compiled to straight-line code for the common case.

    Notes:
        The generated function handles an object whose keys are all raw sub-field names,
        with every REQUIRED key present and every cast clean, exactly as the general walk
        does (same calls, same values); anything else, or any error, goes to ``general``
        (errors appended meanwhile are removed first). Raw names must be distinct strings.
    """
    raw_names = tuple(sub.name for sub in subs)
    namespace: dict[str, Any] = {
        "_general": general,
        "_M": MISSING,
        "_RAW": frozenset(raw_names),
        "_dict": dict,
        "_type": type,
        "_len": len,
    }
    body: list[str] = []
    for index, sub in enumerate(subs):
        namespace[f"_c{index}"] = direct[index]
        item = f"v{index}"
        if sub.mode is Mode.REQUIRED:
            body.append(f"    {item} = get({raw_names[index]!r}, _M)")
            body.append(f"    if {item} is _M:")
            body.append("        del errors[mark:]")
            body.append("        return _general(value, errors)")
            body.append(f"    {_kept_test(item, sub, as_is[index], namespace)}")
        elif sub.mode is Mode.NULLABLE and type(None) in as_is[index]:
            # A missing key and a null give the same null: no need to tell them apart.
            kept = as_is[index] - {type(None)}
            body.append(f"    {item} = get({raw_names[index]!r})")
            test = _kept_test(item, sub, kept, namespace)
            body.append(f"    if {item} is not None and {test.removeprefix('if ')}")
        else:
            body.append(f"    {item} = get({raw_names[index]!r}, _M)")
            body.append(f"    if {item} is _M: {item} = None")
            body.append(f"    el{_kept_test(item, sub, as_is[index], namespace)}")
        body.append(f"        {item} = _c{index}({item}, errors)")
    pairs = ", ".join(f"{name!r}: v{index}" for index, name in enumerate(names))
    source = "\n".join(
        [
            "def record(value, errors):",
            "    if _type(value) is not _dict or not value.keys() <= _RAW:",
            "        return _general(value, errors)",
            "    get = value.get",
            "    mark = _len(errors)",
            *body,
            "    if _len(errors) != mark:",
            "        del errors[mark:]",
            "        return _general(value, errors)",
            f"    return {{{pairs}}}",
        ]
    )
    exec(source, namespace)  # source built from repr()-quoted names only
    compiled: Caster = namespace["record"]
    return compiled


def _kept_test(item: str, sub: Field, kept: frozenset[type], namespace: dict[str, Any]) -> str:
    """Return the ``if`` line that is true when ``item`` must go through its caster."""
    tests: list[str] = []
    for kind in sorted(kept, key=lambda k: k.__name__):
        if kind is type(None):
            tests.append(f"{item} is None")
        else:
            namespace[f"_{kind.__name__}"] = kind
            tests.append(f"_type({item}) is _{kind.__name__}")
    if sub.mode is not Mode.REPEATED and sub.type in NUMERIC_TYPES and sub.scale is None:
        # Numbers stored as they are: ints within int64 and, for FLOAT/NUMERIC, finite floats.
        namespace["_int"], namespace["_MIN"], namespace["_MAX"] = int, -INT64_MAX, INT64_MAX
        tests.append(f"(_type({item}) is _int and _MIN <= {item} <= _MAX)")
        if sub.type is not FieldType.INTEGER:
            namespace["_float"] = float
            tests.append(f"(_type({item}) is _float and {item} - {item} == 0)")
    return f"if not ({' or '.join(tests)}):" if tests else "if True:"
