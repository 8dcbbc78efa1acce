"""Correction: a table's schema can only be widened, as BigQuery enforces on tables.patch/update.

Real BigQuery (managing-table-schemas docs; the 400s its API answers):

* a column (or nested field) present in the table but absent from the new schema:
  400 ``Provided Schema does not match Table P:D.T. Field X is missing in new schema``;
* a changed type (aliases such as INT64/INTEGER, FLOAT64/FLOAT, BOOL/BOOLEAN,
  STRUCT/RECORD are the same type): 400 ``… Field X has changed type from A to B``;
* a changed mode, except the relaxation REQUIRED → NULLABLE:
  400 ``… Field X has changed mode from A to B``;
* a new REQUIRED field: 400 ``Cannot add required fields to an existing schema. (field: X)``.

Nested fields follow the same rules and are named by their dotted path.

bqemulator 1.4.0 accepts every one of these: a patch that retypes, drops or narrows a
column succeeds, so code that would be refused by BigQuery passes every test.

Notes:
    The check reads the catalog's current schema inside the update chain, after the
    ``If-Match`` precondition and under its lock, so it judges the table being replaced.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from plowline_devstack.bigquery.interception import Correction, Exchange, Reply

_TABLE = "/bigquery/v2/projects/{project}/datasets/{dataset}/tables/{table}"
_ALIASES = {"INT64": "INTEGER", "FLOAT64": "FLOAT", "BOOL": "BOOLEAN", "STRUCT": "RECORD"}


async def refuse_narrowing(exchange: Exchange) -> Reply:
    """Answer 400 when the new schema drops, retypes or narrows a field; else run the update."""
    body = exchange.json()
    schema = body.get("schema") if isinstance(body, dict) else None
    new_fields = schema.get("fields") if isinstance(schema, dict) else None
    project, dataset, name = (
        exchange.params["project"],
        exchange.params["dataset"],
        exchange.params["table"],
    )
    table = exchange.context.catalog.get_table(project, dataset, name)
    if table is None or not isinstance(new_fields, list):
        return await exchange.forward(exchange.body)
    old_fields = [rest_field(field) for field in table.schema_.fields]
    problem = schema_change_problem(old_fields, new_fields)
    if problem is None:
        return await exchange.forward(exchange.body)
    prefix = (
        ""
        if problem.startswith("Cannot add")
        else f"Provided Schema does not match Table {project}:{dataset}.{name}. "
    )
    return Reply.invalid(prefix + problem)


def schema_change_problem(
    before: Sequence[dict[str, Any]], after: Sequence[dict[str, Any]], path: str = ""
) -> str | None:
    """Return BigQuery's reason for refusing ``before`` → ``after`` (API field dicts), or None."""
    new_by_name = {str(f.get("name", "")).lower(): f for f in after if isinstance(f, dict)}
    for old in before:
        here = f"{path}{old['name']}"
        new = new_by_name.get(str(old["name"]).lower())
        if new is None:
            return f"Field {here} is missing in new schema"
        problem = _field_change_problem(old, new, here)
        if problem is not None:
            return problem
    old_names = {str(f["name"]).lower() for f in before}
    for new in after:
        if not isinstance(new, dict) or str(new.get("name", "")).lower() in old_names:
            continue
        if _mode(new) == "REQUIRED":
            return f"Cannot add required fields to an existing schema. (field: {path}{new.get('name')})"
    return None


def _field_change_problem(old: dict[str, Any], new: dict[str, Any], here: str) -> str | None:
    old_type, new_type = _type(old), _type(new)
    if old_type != new_type:
        return f"Field {here} has changed type from {old_type} to {new_type}"
    old_mode, new_mode = _mode(old), _mode(new)
    if old_mode != new_mode and (old_mode, new_mode) != ("REQUIRED", "NULLABLE"):
        return f"Field {here} has changed mode from {old_mode} to {new_mode}"
    if old_type == "RECORD":
        return schema_change_problem(old.get("fields") or [], new.get("fields") or [], f"{here}.")
    return None


def _type(field: dict[str, Any]) -> str:
    name = str(field.get("type", "STRING")).upper()
    return _ALIASES.get(name, name)


def _mode(field: dict[str, Any]) -> str:
    return str(field.get("mode") or "NULLABLE").upper()


def rest_field(field: Any) -> dict[str, Any]:
    """Return a catalog field (bqemulator's ``TableFieldSchema``) as the REST API's JSON."""
    out: dict[str, Any] = {"name": field.name, "type": field.type, "mode": field.mode}
    if field.fields:
        out["fields"] = [rest_field(sub) for sub in field.fields]
    if field.range_element_type is not None:  # a RANGE column's DuckDB type needs it
        out["rangeElementType"] = {"type": field.range_element_type.type}
    return out


TABLE_SCHEMA_RULES = Correction(
    name="table-schema-rules",
    summary="tables.patch/update refuse dropped, retyped or narrowed fields and new REQUIRED ones (400)",
    methods=("PATCH", "PUT"),
    paths=(_TABLE,),
    handler=refuse_narrowing,
)
