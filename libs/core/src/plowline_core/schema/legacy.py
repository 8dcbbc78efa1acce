"""2.x's per-schema switches: ``skipSchemas``, ``legacyColumns`` and ``legacyColumnMode``.

Loader 2.x can leave schemas out (``skipSchemas``: no column, nothing written, no failure)
and can write some or all entities as loader 1.x did (``legacyColumns`` lists schemas,
``legacyColumnMode: true`` means every one): one column per full version, named
``<v2 name>_<revision>_<addition>``, never merged, no ``_schema_version``, sub-fields sorted by
name at every level, and values cast as 1.x casts them (a JSON-typed field is a STRING column
and a plain string is written without quotes). A legacy schema is not looked up for the v2
column at all.

Order, as 2.x applies them: a skipped schema is skipped even when it is legacy;
``legacyColumnMode`` beats ``legacyColumns``.

Notes:
    Pure and hashable (picklable with the loader's worker config).
    2.x maps a legacy ``Numeric`` to ``Decimal(Digits38, 9)`` (NUMERIC(38, 9)); the 1.x
    mapping it applies (schema-ddl's bigquery module, the same in every release 2.x and
    1.x use) never makes a ``Numeric`` (a bounded number is FLOAT, vector
    ``schema_to_field_018``), so no legacy column is NUMERIC, in 2.x as here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from plowline_core.iglu.key import SchemaCriterion, SchemaKey
from plowline_core.schema.columns import column_field
from plowline_core.schema.entity import ColumnMode, ShredProperty
from plowline_core.schema.field import Field
from plowline_core.schema.names import java_order


@dataclass(frozen=True, slots=True)
class ColumnRules:
    """The 2.x switches that pick, per schema, skip / legacy column / v2 column.

    Attributes:
        skip_schemas: schemas to leave out (2.x ``skipSchemas``).
        legacy_columns: schemas written as 1.x columns (2.x ``legacyColumns``).
        legacy_column_mode: every schema written as a 1.x column (2.x ``legacyColumnMode``).
    """

    skip_schemas: tuple[SchemaCriterion, ...] = ()
    legacy_columns: tuple[SchemaCriterion, ...] = ()
    legacy_column_mode: bool = False

    def skips(self, key: SchemaKey) -> bool:
        """Say whether ``key`` is left out of the row and the table."""
        return any(criterion.matches(key) for criterion in self.skip_schemas)

    def legacy(self, key: SchemaKey) -> bool:
        """Say whether ``key`` gets a 1.x column."""
        return self.legacy_column_mode or any(c.matches(key) for c in self.legacy_columns)


#: No schema skipped, none legacy: 2.x's defaults.
NO_RULES = ColumnRules()


def legacy_field(key: SchemaKey, schema: Mapping[str, Any], shred: ShredProperty) -> Field:
    """Return the 1.x column 2.x writes for a legacy schema: 1.x's, sub-fields sorted by name."""
    return _sorted(column_field(key, schema, shred, ColumnMode.FULL))


def _sorted(field: Field) -> Field:
    subs = sorted((_sorted(sub) for sub in field.fields), key=lambda sub: java_order(sub.name))
    return Field(field.name, field.type, field.mode, tuple(subs))
