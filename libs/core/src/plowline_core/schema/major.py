"""The 2.x (``major``) column of an entity key, as the loader routes it and the mutator adds it.

``major_column(key, shred, resolver)`` resolves the key's model's versions up to the key
(``Resolver.versions_up_to``), builds each one's v2 column (``columns.major_field``) and
merges them (``family.route``): the answer names the column the key's values go to (the
model's column, or the key's recovery column), the column the mutator adds for it (None: 2.x
adds none, and the values are dropped), and the key's own schema (the caster's).

Outcomes:
    ``MajorColumn``     the key's column
    ``SchemaNotFound``  the key itself is in no repository
    raises ``InvalidSchema`` a version of the series does not decode as JSON Schema (2.x:
                        ``LoaderIgluError.InvalidSchema``, an Iglu failure of the event)

Notes:
    Pure apart from the resolver (which caches). A version listed but not found is left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from plowline_core.iglu.key import SchemaKey, SchemaVer
from plowline_core.iglu.resolver import ResolvedSchema, SchemaNotFound
from plowline_core.ports import SchemaResolver, VersionResolver
from plowline_core.schema.columns import major_field
from plowline_core.schema.ddl_json import InvalidSchema, check
from plowline_core.schema.entity import ColumnMode, ShredProperty
from plowline_core.schema.family import route
from plowline_core.schema.field import Field
from plowline_core.schema.names import column_name

#: 2.x's message for a schema that does not decode (common-streams ``LoaderIgluError``).
INVALID_SCHEMA_MESSAGE = "Cannot be parsed as JSON Schema AST"

__all__ = ["INVALID_SCHEMA_MESSAGE", "InvalidSchema", "MajorColumn", "major_column"]


@dataclass(frozen=True, slots=True)
class MajorColumn:
    """Where one entity key's values go under the 2.x rules, and the column that needs.

    Attributes:
        column: the column name the values go to (main or recovery).
        recovered: True for a recovery column.
        field: the column the mutator adds (normalised names; NULLABLE or REPEATED at the
            top), None when 2.x adds no column for the key (its values are dropped).
        schema: the key's own JSON Schema.
    """

    column: str
    recovered: bool
    field: Field | None
    schema: Mapping[str, Any]


def major_column(
    key: SchemaKey, shred: ShredProperty, resolver: SchemaResolver
) -> MajorColumn | SchemaNotFound:
    """Return the key's 2.x column, or SchemaNotFound when the key is in no repository.

    Raises:
        InvalidSchema: a version up to the key does not decode as JSON Schema.
        RegistryUnavailable: a repository could not answer.
    """
    own = resolver.resolve(key)
    if isinstance(own, SchemaNotFound):
        return own
    check(own.schema)
    versions: tuple[SchemaVer, ...] = (key.version,)
    if isinstance(resolver, VersionResolver):
        versions = resolver.versions_up_to(key) or versions
    name = column_name(key, shred, ColumnMode.MAJOR)
    repeated = shred is not ShredProperty.UNSTRUCT_EVENT
    built: list[tuple[SchemaVer, Mapping[str, Any], Field | None]] = []
    for version in versions:
        if version == key.version:
            schema: Mapping[str, Any] = own.schema
        else:
            found = resolver.resolve(SchemaKey(key.vendor, key.name, key.format, version))
            if not isinstance(found, ResolvedSchema):
                continue
            schema = found.schema
            check(schema)
        built.append((version, schema, major_field(name, schema, repeated)))
    routed, field = route(key, name, built)
    return MajorColumn(routed.column, routed.recovered, field, own.schema)
