"""Correction: a table schema past BigQuery's limits is refused with 400, as BigQuery does.

Real BigQuery (``tables.insert``, ``tables.patch``, ``tables.update``) answers HTTP 400,
``reason: invalid``, and changes nothing, when the schema sent:

* holds a field name, at any depth, that is empty or longer than 300 characters
  (``Invalid field name "…". Fields must contain the allowed characters, and be at most
  300 characters long.``), or two sibling names equal ignoring case (``Field … already
  exists in schema``);
* holds more than 10,000 leaf fields, nested ones included (``Too many total leaf
  fields: 10001, max allowed field count: 10000``).

bqemulator 1.4.0 accepts an over-long name into its catalog, and works through a schema
of 10,001 columns column by column until the client gives up. The mutator must get the
refusal BigQuery gives to report the one column at fault and add the others.
Changes to existing fields (retyped, dropped, narrowed) are ``table-schema-rules``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from plowline_devstack.bigquery.interception import Correction, Exchange, Reply

_TABLES = "/bigquery/v2/projects/{project}/datasets/{dataset}/tables"
_TABLE = _TABLES + "/{table}"
MAX_LEAF_FIELDS = 10_000
MAX_NAME_LENGTH = 300


async def refuse_schema_past_limits(exchange: Exchange) -> Reply:
    """Answer 400 for a schema past BigQuery's limits; hand every other request on."""
    body = exchange.json()
    schema = body.get("schema") if isinstance(body, dict) else None
    fields = schema.get("fields") if isinstance(schema, dict) else None
    if not isinstance(fields, list):
        return await exchange.forward(exchange.body)
    problem = limit_problem(fields)
    if problem is None:
        return await exchange.forward(exchange.body)
    return Reply.invalid(problem)


def limit_problem(fields: Sequence[Any]) -> str | None:
    """Return BigQuery's reason for refusing a schema (API field dicts), or None."""
    name_problem = _name_problem(fields)
    if name_problem is not None:
        return name_problem
    leaves = _leaf_count(fields)
    if leaves > MAX_LEAF_FIELDS:
        return f"Too many total leaf fields: {leaves}, max allowed field count: {MAX_LEAF_FIELDS}"
    return None


def _name_problem(fields: Sequence[Any]) -> str | None:
    seen: set[str] = set()
    for field in fields:
        name = str(field.get("name", "")) if isinstance(field, Mapping) else ""
        if not name or len(name) > MAX_NAME_LENGTH:
            return (
                f'Invalid field name "{name}". Fields must contain the allowed characters, '
                f"and be at most {MAX_NAME_LENGTH} characters long."
            )
        if name.lower() in seen:
            return f"Field {name} already exists in schema"
        seen.add(name.lower())
        subs = field.get("fields")
        nested = _name_problem(subs) if isinstance(subs, list) else None
        if nested is not None:
            return nested
    return None


def _leaf_count(fields: Sequence[Any]) -> int:
    total = 0
    for field in fields:
        subs = field.get("fields") if isinstance(field, Mapping) else None
        kind = str(field.get("type", "")).upper() if isinstance(field, Mapping) else ""
        is_record = kind in ("RECORD", "STRUCT") and isinstance(subs, list)
        total += _leaf_count(subs) if is_record and isinstance(subs, list) else 1
    return total


TABLE_SCHEMA_LIMITS = Correction(
    name="table-schema-limits",
    summary="tables.insert/patch/update refuse empty or over-long names and more than "
    "10,000 leaf fields (400 invalid)",
    methods=("POST", "PATCH", "PUT"),
    paths=(_TABLES, _TABLE),
    handler=refuse_schema_past_limits,
)
