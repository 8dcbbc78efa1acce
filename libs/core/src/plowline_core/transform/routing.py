"""Where the loader writes each entity in 2.x (``major``) column mode, and what fails.

``MajorRouter.route(key, shred, failures)`` answers once per entity key (the row builder
caches the answer in its plan):

- a schema ``rules`` skip, or one 2.x adds no column for → ``Route("")``: not written;
- a legacy schema (``rules``) → its 1.x column, cast as 1.x casts (``schema.legacy``), but
  a WrongType names 2.x's type (``legacy_texts``: 2.x casts a legacy column through the v2
  type of each 1.x type);
- otherwise → the model's column or the key's recovery column (``schema.major``);
- None, with a failure item appended, when the key is in no repository, a schema does not
  decode as JSON Schema (``{"schemaKey", "message"}``, 2.x's ``InvalidSchema``), or the
  model's column name is claimed by another model (2.x's ``ClashingFieldNames``, which
  stops 2.x; here only the events of the two models fail).

Notes:
    Clashes: the first model to claim a column owns it until a second one claims it; from
    then on both fail (which one came first is chance), and ``take_clashed`` hands the
    column to the row builder so it drops the plans it cached for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any, NamedTuple

from plowline_core.iglu.key import SchemaKey
from plowline_core.iglu.resolver import Resolver, SchemaNotFound
from plowline_core.schema.ddl_json import InvalidSchema, check
from plowline_core.schema.entity import ColumnMode, ShredProperty
from plowline_core.schema.legacy import ColumnRules
from plowline_core.schema.major import INVALID_SCHEMA_MESSAGE, major_column
from plowline_core.schema.names import column_name
from plowline_core.transform.problems import Caster, CastError, NotAnArray, WrongType

#: The ``expected`` of a WrongType in a legacy column: 2.x maps each 1.x type to a v2 type
#: (String → Json, reported ``String``; Integer → Long; Float → Double; Numeric →
#: Decimal(Digits38, 9); DateTime → Timestamp; a record → Struct) and casts with it.
LEGACY_EXPECTED = {
    "STRING": "String",
    "JSON": "String",
    "INTEGER": "Long",
    "FLOAT": "Double",
    "NUMERIC": "Decimal(Digits38,9)",
    "BOOLEAN": "Boolean",
    "DATE": "Date",
    "TIMESTAMP": "Timestamp",
    "RECORD": "Struct",
}

#: No column: the entity is not written.
NOWHERE = ""


class Route(NamedTuple):
    """The column an entity key is written to (``NOWHERE``: none), its schema and cast rules."""

    column: str
    schema: Mapping[str, Any]
    mode: ColumnMode


class MajorRouter:
    """Route entity keys to their 2.x columns, remembering which model claimed which column."""

    def __init__(self, resolver: Resolver, rules: ColumnRules) -> None:
        self._resolver = resolver
        self._rules = rules
        self._claims: dict[str, tuple[str, str, int]] = {}
        self._clashed: dict[str, str] = {}
        self._new_clashes: list[str] = []

    def route(
        self, key: SchemaKey, shred: ShredProperty, failures: list[Mapping[str, Any]]
    ) -> Route | None:
        """Return the key's route, or None after appending the failure that stops it.

        Raises:
            RegistryUnavailable: a repository could not answer.
        """
        if self._rules.skips(key):
            return Route(NOWHERE, {}, ColumnMode.MAJOR)
        try:
            if self._rules.legacy(key):
                return self._legacy(key, shred, failures)
            major = major_column(key, shred, self._resolver)
        except InvalidSchema:
            failures.append({"schemaKey": key.to_uri(), "message": INVALID_SCHEMA_MESSAGE})
            return None
        if isinstance(major, SchemaNotFound):
            failures.append(major.to_failure())
            return None
        if major.field is None:
            return Route(NOWHERE, major.schema, ColumnMode.MAJOR)
        main = column_name(key, shred, ColumnMode.MAJOR)
        clash = self._claim(main, (key.vendor, key.name, key.version.model))
        if clash is not None:
            failures.append({"schemaKey": key.to_uri(), "message": clash})
            return None
        return Route(major.column, major.schema, ColumnMode.MAJOR)

    def take_clashed(self) -> list[str]:
        """Return (and forget) the columns found clashing since the last call."""
        clashed, self._new_clashes = self._new_clashes, []
        return clashed

    def _legacy(
        self, key: SchemaKey, shred: ShredProperty, failures: list[Mapping[str, Any]]
    ) -> Route | None:
        resolution = self._resolver.resolve(key)
        if isinstance(resolution, SchemaNotFound):
            failures.append(resolution.to_failure())
            return None
        check(resolution.schema)
        column = column_name(key, shred, ColumnMode.FULL)
        return Route(column, resolution.schema, ColumnMode.FULL)

    def _claim(self, column: str, model: tuple[str, str, int]) -> str | None:
        """Claim ``column`` for ``model``; return the clash message when another model has it."""
        clashed = self._clashed.get(column)
        if clashed is not None:
            return clashed
        owner = self._claims.setdefault(column, model)
        if owner == model:
            return None
        names = ", ".join(f"{vendor}.{name}" for vendor, name, _ in sorted({owner, model}))
        message = f"schemas [{names}] have clashing column names"
        self._clashed[column] = message
        self._new_clashes.append(column)
        return message


def legacy_texts(caster: Caster) -> Caster:
    """Return ``caster`` with the errors it adds naming 2.x's types (``LEGACY_EXPECTED``)."""

    def legacy(value: Any, errors: list[CastError]) -> Any:
        mark = len(errors)
        result = caster(value, errors)
        if len(errors) > mark:
            errors[mark:] = [_renamed(error) for error in errors[mark:]]
        return result

    return legacy


def _renamed(error: CastError) -> CastError:
    if isinstance(error, WrongType | NotAnArray):
        return replace(error, expected=LEGACY_EXPECTED.get(error.expected, error.expected))
    return error
