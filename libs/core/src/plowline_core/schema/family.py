"""The 2.x column of an entity: its model's minor versions merged, or a recovery column.

Loader 2.x (common-streams ``NonAtomicFields`` / ``TypedTabledEntity``) gives every model
(``vendor/name/M``) one column, built by merging the fields of every minor version of the
model up to the newest one in the batch, in SchemaVer order:

- the first version's fields come first; a field a later version adds is appended, NULLABLE;
  a field a later version drops is kept, NULLABLE; a field NULLABLE in either is NULLABLE;
- a version that retypes a field (STRING → FLOAT, a record → a scalar, REPEATED → not…)
  does not merge: it gets a recovery column of its own,
  ``<column>_recovered_<M>_<R>_<A>_<hash>`` (``ddl_json.recovery_hash``), typed by that
  version alone, and the merge goes on without it;
- a version whose field v2 drops (an object with no properties and no additional ones)
  adds nothing.

plowline decides per entity key, not per batch: the column of ``M-R-A`` is the merge of the
versions up to ``M-R-A``. Whether a version merges depends only on the versions before it,
so the key's column (main or recovery) is the one 2.x gives in any batch; the main column the
mutator widens to is the merge up to the newest version seen so far, as 2.x's table.

Notes:
    Pure: the caller resolves the versions (``Resolver.versions_up_to``).
    Merging compares normalised fields (BigQuery names), as the table holds them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from plowline_core.iglu.key import SchemaKey, SchemaVer
from plowline_core.schema.ddl_json import recovery_hash
from plowline_core.schema.field import Field, FieldType, Mode


@dataclass(frozen=True, slots=True)
class Routed:
    """Where one entity key's values go: a column name, and whether it is a recovery column."""

    column: str
    recovered: bool


class _Breaking(Exception):
    """A version's field cannot merge into the column (internal: never leaves this module)."""


def route(
    key: SchemaKey,
    column: str,
    built: Sequence[tuple[SchemaVer, Mapping[str, Any], Field | None]],
) -> tuple[Routed, Field | None]:
    """Return the route of ``key`` and the column field it needs (None: no column).

    ``built`` lists the model's versions up to ``key.version`` in SchemaVer order, each with
    its schema and its normalised v2 column field named ``column`` (None where v2 drops it).

    Notes:
        The recovery column carries the key's own field, renamed.
    """
    merged: Field | None = None
    for version, schema, field in built:
        if field is None:
            continue
        try:
            merged = field if merged is None else merge(merged, field)
        except _Breaking:
            if version == key.version:
                name = f"{column}_recovered_{version.model}_{version.revision}_{version.addition}"
                name = f"{name}_{recovery_hash(schema)}"
                recovery = Field(name, field.type, field.mode, field.fields)
                return Routed(name, True), recovery
            continue
        if version == key.version:
            return Routed(column, False), merged
    return Routed(column, False), None


def merge(source: Field, target: Field) -> Field:
    """Return ``source`` widened by ``target`` (a later minor version), the name of ``source``.

    Raises:
        _Breaking: a field changed type or repetition.
    """
    if source.type is not target.type or (source.mode is Mode.REPEATED) != (
        target.mode is Mode.REPEATED
    ):
        raise _Breaking(source.name)
    mode = source.mode
    if mode is Mode.REQUIRED and target.mode is not Mode.REQUIRED:
        mode = Mode.NULLABLE
    if source.type is not FieldType.RECORD:
        return Field(source.name, source.type, mode)
    later = {sub.name: sub for sub in target.fields}
    subs: list[Field] = []
    for sub in source.fields:
        other = later.pop(sub.name, None)
        subs.append(_nullable(sub) if other is None else merge(sub, other))
    subs.extend(_nullable(sub) for sub in later.values())
    return Field(source.name, source.type, mode, tuple(subs))


def _nullable(field: Field) -> Field:
    if field.mode is Mode.REQUIRED:
        return Field(field.name, field.type, Mode.NULLABLE, field.fields)
    return field
