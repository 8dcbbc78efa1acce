"""The top-level entity column the mutator adds for a (schema, shred property) pair.

Notes:
    v1 (``full``, BigQuery Loader 1.x ``Mutator.getField``):
    ``Field.build(column, schema, false).setMode(NULLABLE | REPEATED).normalized``
    (vectors 026-028). Deviation: v1 keeps two sub-fields whose names normalise alike
    (vector 025), which BigQuery refuses in a patch; we keep the first (the order is
    REQUIRED, REPEATED, NULLABLE, then raw name) and drop the rest.
    v2 (``major``, common-streams ``TypedTabledEntity.fieldFromSchema``): unstruct →
    ``Field.build(column, schema, false)`` normalised (vectors 055, 059); contexts →
    ``Field.buildRepeated(column, schema, enforceItemPresence=true)`` normalised, with a
    REQUIRED STRING ``_schema_version`` first in the record (vectors 056, 060; upstream's ids: the repository does not
    carry them, their source's license forbids it, see ``tests/data/conformance/README.md``).
    ``major_field`` gives None where v2 drops the entity (no storable field); ``column_field``
    (one version alone, for callers without a resolver) gives a JSON column there instead.
    The 2.x column of a key, merged over its model's minor versions, is ``major.major_column``.
    Every entity column is NULLABLE or REPEATED, never REQUIRED: older rows lack it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from plowline_core.iglu.key import SchemaKey
from plowline_core.schema.entity import ColumnMode, ShredProperty
from plowline_core.schema.field import Field, FieldType, Mode
from plowline_core.schema.mapping import field_from_schema, normalized
from plowline_core.schema.mapping_v2 import element_of_v2, field_from_schema_v2, normalized_v2
from plowline_core.schema.names import column_name

#: The sub-field v2 adds to every context record: the entity's full SchemaVer.
SCHEMA_VERSION_FIELD = Field("_schema_version", FieldType.STRING, Mode.REQUIRED)


def column_field(
    key: SchemaKey,
    schema: Mapping[str, Any],
    shred: ShredProperty,
    mode: ColumnMode = ColumnMode.FULL,
) -> Field:
    """Return the BigQuery column (normalised names) the mutator adds for this entity."""
    name = column_name(key, shred, mode)
    repeated = shred is not ShredProperty.UNSTRUCT_EVENT
    if mode is ColumnMode.MAJOR:
        column = major_field(name, schema, repeated)
        return column if column is not None else Field(name, FieldType.JSON, _top(repeated))
    built = normalized(field_from_schema(name, schema, False))
    column_mode = Mode.REPEATED if repeated else Mode.NULLABLE
    return Field(name, built.type, column_mode, _unique(built.fields))


def major_field(name: str, schema: Mapping[str, Any], repeated: bool) -> Field | None:
    """Return the 2.x column of one schema version (normalised), or None where 2.x adds none.

    Notes:
        None: the schema is an object with no properties and no additional ones (2.x drops
        the entity: no column, nothing written).
    """
    if repeated:
        element = element_of_v2(schema)
        if element is None:
            return None
        fields = normalized_v2(element).fields
        if element.type is FieldType.RECORD:
            fields = (SCHEMA_VERSION_FIELD, *(f for f in fields if f.name != "_schema_version"))
        return Field(name, element.type, Mode.REPEATED, fields)
    built = field_from_schema_v2(name, schema, False)
    if built is None:
        return None
    column_mode = Mode.REPEATED if built.mode is Mode.REPEATED else Mode.NULLABLE
    return Field(name, built.type, column_mode, normalized_v2(built).fields)


def _top(repeated: bool) -> Mode:
    return Mode.REPEATED if repeated else Mode.NULLABLE


def _unique(fields: tuple[Field, ...]) -> tuple[Field, ...]:
    seen: set[str] = set()
    kept: list[Field] = []
    for sub in fields:
        folded = sub.name.lower()
        if folded not in seen:
            seen.add(folded)
            kept.append(Field(sub.name, sub.type, sub.mode, _unique(sub.fields)))
    return tuple(kept)
