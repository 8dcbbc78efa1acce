"""What BigQuery refuses in a table schema, checked before a patch is sent.

Two rules decide whether one column can join the events table on its own merits:

- every name in it, nested names included, is a legal field name (``is_valid_name``: a
  letter or ``_`` first, then letters, digits and ``_``, at most 300 characters) and no
  two sibling names are equal ignoring case (BigQuery names are case-insensitive);
- the table, with it, holds at most ``MAX_LEAF_FIELDS`` leaf fields (BigQuery counts
  every non-RECORD field, nested ones included: "Too many total leaf fields: 10001, max
  allowed field count: 10000").

Notes:
    Pure. A column that breaks a rule can never be added however often it is retried, so
    the mutator reports it and goes on with the other columns of the same message.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from plowline_core.schema.field import Field, FieldType
from plowline_core.schema.names import is_valid_name
from plowline_core.schema.widening import plan_widening

#: BigQuery's limit on the leaf fields of one table.
MAX_LEAF_FIELDS = 10_000


def leaf_count(fields: Iterable[Field]) -> int:
    """Return how many leaf (non-RECORD) fields ``fields`` hold, at every depth."""
    total = 0
    for field in fields:
        total += leaf_count(field.fields) if field.type is FieldType.RECORD else 1
    return total


def illegal_names(field: Field, parent: str = "") -> list[str]:
    """Return a description of each name in ``field`` that BigQuery would refuse."""
    path = f"{parent}.{field.name}" if parent else field.name
    problems = [] if is_valid_name(field.name) else [f"{path!r} is no legal field name"]
    seen: set[str] = set()
    for sub in field.fields:
        lowered = sub.name.lower()
        if lowered in seen:
            problems.append(f"{path}.{sub.name} appears twice (names ignore case)")
        seen.add(lowered)
        problems.extend(illegal_names(sub, path))
    return problems


def split_at_limit(
    table: Sequence[Field], needed: Sequence[Field], limit: int = MAX_LEAF_FIELDS
) -> tuple[tuple[Field, ...], tuple[Field, ...]]:
    """Return the needed columns that fit under ``limit`` leaf fields, and those that do not.

    Notes:
        First come, first served, in ``needed`` order: a column that would take the table
        past the limit is left out and the next ones are still tried (a smaller one may
        fit). A column the table already holds in full always fits.
    """
    schema = tuple(table)
    fits: list[Field] = []
    over: list[Field] = []
    for column in needed:
        plan = plan_widening(schema, [column])
        if plan.is_empty or leaf_count(plan.schema) <= limit:
            fits.append(column)
            schema = plan.schema
        else:
            over.append(column)
    return tuple(fits), tuple(over)
