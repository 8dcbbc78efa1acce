"""Entity types: where a self-describing entity sits in an event, and how columns are named.

An *entity type* is what the loader publishes on the types topic and what the mutator
turns into a column: a schema key plus its shred property.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from plowline_core.iglu.key import SchemaKey


class ShredProperty(StrEnum):
    """Where an entity sits in an enriched event (Snowplow's names)."""

    CONTEXTS = "CONTEXTS"
    DERIVED_CONTEXTS = "DERIVED_CONTEXTS"
    UNSTRUCT_EVENT = "UNSTRUCT_EVENT"


class ColumnMode(StrEnum):
    """Column naming and typing rules.

    ``full``: loader 0.x/1.x (one column per full SchemaVer, schema-ddl v1 rules), the default.
    ``major``: loader 2.x (one column per model, v2 rules).
    """

    FULL = "full"
    MAJOR = "major"


@dataclass(frozen=True, slots=True, order=True)
class EntityType:
    """A (schema, shred property) pair: one entity column's reason to exist."""

    schema: SchemaKey
    shred_property: ShredProperty
