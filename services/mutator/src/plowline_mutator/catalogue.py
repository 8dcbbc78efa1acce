"""Describe the table's entity columns and the schema each came from, for ``GET /v1/columns``.

Notes:
    A column name does not determine its schema key: ``[.-]`` in the vendor and name both
    become ``_``, camelCase is folded, the vendor/name boundary is lost, the format is
    dropped, derived contexts share the ``contexts_`` prefix, and ``major`` mode keeps only
    the model. So ``schema`` is given exactly only for columns this process built (it
    remembers the key); otherwise it is null and ``vendorAndName`` / ``version`` show what
    the name does say (``com_acme_link_click`` / ``1-0-0``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from plowline_core.schema.entity import ColumnMode, EntityType, ShredProperty
from plowline_core.schema.field import Field

_PREFIXES = (
    ("unstruct_event_", ShredProperty.UNSTRUCT_EVENT),
    ("contexts_", ShredProperty.CONTEXTS),
)
_FULL_SUFFIX = re.compile(r"^(?P<base>.+)_(?P<m>\d+)_(?P<r>\d+)_(?P<a>\d+)$", re.ASCII)
_MAJOR_SUFFIX = re.compile(r"^(?P<base>.+)_(?P<m>\d+)$", re.ASCII)


def describe_columns(
    table: Sequence[Field], known: Mapping[str, EntityType], mode: ColumnMode
) -> list[dict[str, Any]]:
    """Return one description per entity column of the table, in table order."""
    described = (_describe(field, known, mode) for field in table)
    return [item for item in described if item is not None]


def _describe(
    field: Field, known: Mapping[str, EntityType], mode: ColumnMode
) -> dict[str, Any] | None:
    name = field.name.lower()
    matched = _entity_prefix(name)
    if matched is None:
        return None
    rest, shred = matched
    entity = known.get(name)
    base, version = _split_version(rest, mode)
    return {
        "column": field.name,
        "shredProperty": (entity.shred_property if entity else shred).value,
        "schema": entity.schema.to_uri() if entity else None,
        "vendorAndName": base,
        "version": version,
        "field": field.to_api(),
    }


def _entity_prefix(name: str) -> tuple[str, ShredProperty] | None:
    for prefix, shred in _PREFIXES:
        if name.startswith(prefix):
            return name[len(prefix) :], shred
    return None


def _split_version(rest: str, mode: ColumnMode) -> tuple[str, str | None]:
    pattern = _MAJOR_SUFFIX if mode is ColumnMode.MAJOR else _FULL_SUFFIX
    match = pattern.match(rest)
    if match is None:
        return rest, None
    if mode is ColumnMode.MAJOR:
        return match["base"], match["m"]
    return match["base"], f"{match['m']}-{match['r']}-{match['a']}"
