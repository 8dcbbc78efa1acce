"""Create the events table idempotently (DAY partitioning, optional clustering).

Notes:
    Idempotent: an existing table is accepted when it has every requested field with the
    same type and mode (extra columns are fine: the mutator adds them) and the requested
    partitioning and clustering; otherwise PermanentError names each difference. With
    ``check_existing=False`` any existing table is accepted as it is (loader 2.x's
    create-if-not-exists at start).
"""

from __future__ import annotations

from collections.abc import Sequence

from google.api_core import exceptions as gexc
from google.cloud import bigquery
from google.cloud.bigquery.retry import DEFAULT_RETRY
from plowline_core.errors import PermanentError
from plowline_core.schema.field import Field, FieldType

from plowline_cloud.errors import translated
from plowline_cloud.table_schema import fields_of, table_reference


def create_events_table(
    client: bigquery.Client,
    table_ref: str | bigquery.TableReference,
    fields: Sequence[Field],
    partition_column: str | None = None,
    require_partition_filter: bool = False,
    cluster_by: Sequence[str] = (),
    *,
    timeout: float = 30.0,
    retry_deadline: float = 60.0,
    check_existing: bool = True,
) -> bool:
    """Create the table unless a compatible one exists; return True when it was created now.

    Raises:
        PermanentError: a table of that name exists and is incompatible.
    """
    ref = table_reference(client, table_ref)
    retry = DEFAULT_RETRY.with_deadline(retry_deadline)
    table = bigquery.Table(
        ref, schema=[bigquery.SchemaField.from_api_repr(f.to_api()) for f in fields]
    )
    if partition_column:
        table.time_partitioning = bigquery.TimePartitioning(
            type_=bigquery.TimePartitioningType.DAY, field=partition_column
        )
        table.require_partition_filter = require_partition_filter
    if cluster_by:
        table.clustering_fields = list(cluster_by)
    name = f"{ref.project}.{ref.dataset_id}.{ref.table_id}"
    with translated(f"create table {name}"):
        try:
            client.create_table(table, retry=retry, timeout=timeout)
        except gexc.Conflict:
            if not check_existing:
                return False
            existing = client.get_table(ref, retry=retry, timeout=timeout)
            _check_compatible(name, existing, fields, partition_column, cluster_by)
            return False
    return True


def _check_compatible(
    name: str,
    existing: bigquery.Table,
    fields: Sequence[Field],
    partition_column: str | None,
    cluster_by: Sequence[str],
) -> None:
    problems = field_differences(fields_of(existing), fields)
    partitioning = existing.time_partitioning
    if partition_column and (
        partitioning is None
        or (partitioning.field or "").lower() != partition_column.lower()
        or partitioning.type_ != bigquery.TimePartitioningType.DAY
    ):
        problems.append(f"not partitioned by DAY on {partition_column}")
    have_clustering = [c.lower() for c in existing.clustering_fields or ()]
    if cluster_by and have_clustering != [c.lower() for c in cluster_by]:
        problems.append(f"clustered by {have_clustering or 'nothing'}, not {list(cluster_by)}")
    if problems:
        raise PermanentError(
            f"table {name} exists and is incompatible with the events table: " + "; ".join(problems)
        )


def field_differences(have: Sequence[Field], wanted: Sequence[Field], path: str = "") -> list[str]:
    """Describe each wanted field that the existing fields lack or declare differently."""
    by_name = {field.name.lower(): field for field in have}
    problems: list[str] = []
    for field in wanted:
        where = f"{path}{field.name}"
        found = by_name.get(field.name.lower())
        if found is None:
            problems.append(f"{where} is missing")
        elif (found.type, found.mode) != (field.type, field.mode):
            problems.append(
                f"{where} is {found.type_name} {found.mode.value}, "
                f"expected {field.type_name} {field.mode.value}"
            )
        elif field.type is FieldType.RECORD:
            problems.extend(field_differences(found.fields, field.fields, f"{where}."))
    return problems
