"""What one entity type compiles to: its column, its caster and its place in a row's types.

``RowBuilder`` (``transform.row``) compiles one ``EntityPlan`` per (schema key, shred
property) the first time an event carries it, and reuses it for every later event.

Notes:
    Pure. In column mode ``major`` a context's items carry ``_schema_version``, filled
    from the schema key, not from the data, so the caster is built without that sub-field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from plowline_core.iglu.key import SchemaKey
from plowline_core.schema.entity import ColumnMode, EntityType, ShredProperty
from plowline_core.schema.field import Field
from plowline_core.schema.mapping import field_from_schema
from plowline_core.schema.names import column_name
from plowline_core.transform.cast import Caster, CastError, caster_for, element_caster_for

SCHEMA_VERSION_FIELD = "_schema_version"
"""The sub-field of a major-mode context item that names the item's schema version."""


class EntityPlan(NamedTuple):
    """What one (schema key, shred property) needs: its column, caster and entity type.

    ``column`` is ``""`` for an entity that has no column (2.x drops it: an empty object with
    no additional properties, or a schema in ``skip_schemas``): its values are not written.
    """

    column: str
    caster: Caster
    entity_type: EntityType
    uri: str
    schema_version: str | None  # set in major mode for contexts: each item says its version
    bit: int  # this plan's bit in a row's mask of types


def compile_plan(
    key: SchemaKey,
    schema: Mapping[str, Any],
    shred: ShredProperty,
    mode: ColumnMode,
    bit: int,
    column: str | None = None,
) -> EntityPlan:
    """Compile the caster of one entity type writing to ``column`` (default: its own)."""
    column = column or column_name(key, shred, mode)
    # The raw-named field (schema-ddl Field.build): the caster looks keys up by raw name and
    # writes normalised names, as loader 1.x does. The column itself is the mutator's business.
    field = field_from_schema(column, schema, False, mode)
    version: str | None = None
    if shred is ShredProperty.UNSTRUCT_EVENT:
        caster = caster_for(field, mode)
    else:
        if mode is ColumnMode.MAJOR:
            version = str(key.version)
            field = _without_schema_version(field)
        caster = element_caster_for(field, mode)
    entity_type = EntityType(key, shred)
    return EntityPlan(column, caster, entity_type, key.to_uri(), version, bit)


def skip_values(value: Any, errors: list[CastError]) -> Any:
    """The caster of an entity without a column: never called (its plan's column is empty)."""
    return None


def _without_schema_version(field: Field) -> Field:
    """Drop the ``_schema_version`` sub-field: the loader fills it from the key, not the data."""
    subs = tuple(sub for sub in field.fields if sub.name != SCHEMA_VERSION_FIELD)
    return Field(field.name, field.type, field.mode, subs)
