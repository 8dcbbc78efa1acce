"""A widening that lands while insertAll requests run stays in the table's schema.

Seen in CI: the mutator added a column (its patch returned 200), and for minutes after,
tables.get did not list it; the loader's and the repeater's rows that named it were
refused as naming an unknown field. bqemulator's insertAll writes the table's catalog
entry back as it read it before the widening. BigQuery never undoes a patch.
"""

from __future__ import annotations

import threading
import uuid

from google.cloud import bigquery
from google.cloud.bigquery.retry import DEFAULT_RETRY
from plowline_devstack.stack.lifecycle import LocalStack

RETRY = DEFAULT_RETRY.with_deadline(5.0)
S = bigquery.SchemaField
_COLUMNS = 40  # widenings, one column each, while the inserts run
_WRITERS = 6  # threads inserting all along
_ROWS = 1000  # a request's rows: an insert long enough to overlap a widening


def _widen_while_inserting(client: bigquery.Client, dataset: str) -> tuple[set[str], list[str]]:
    """Add columns one by one while writers insert; return the names missing after, errors."""
    table_id = f"{client.project}.{dataset}.w_{uuid.uuid4().hex[:10]}"
    table = client.create_table(
        bigquery.Table(table_id, schema=[S("id", "STRING", mode="REQUIRED")]),
        retry=RETRY,
        timeout=10,
    )
    stop, errors = threading.Event(), []

    def insert() -> None:
        while not stop.is_set():
            rows = [{"id": uuid.uuid4().hex} for _ in range(_ROWS)]
            try:
                refused = client.insert_rows_json(table_id, rows, retry=RETRY, timeout=30)
            except Exception as error:  # the test reports it; a writer must not die silently
                errors.append(f"{type(error).__name__}: {error}")
                return
            if refused:
                errors.append(f"refused: {refused[:1]}")
                return

    writers = [threading.Thread(target=insert, daemon=True) for _ in range(_WRITERS)]
    for writer in writers:
        writer.start()
    added: list[str] = []
    try:
        for n in range(_COLUMNS):
            table = client.get_table(table_id, retry=RETRY, timeout=10)
            added.append(f"c{n}")
            table.schema = [*table.schema, S(f"c{n}", "STRING")]
            client.update_table(table, ["schema"], retry=RETRY, timeout=30)
    finally:
        stop.set()
        for writer in writers:
            writer.join(60)
    final = {field.name for field in client.get_table(table_id, retry=RETRY, timeout=10).schema}
    return set(added) - final, errors


def test_a_widening_during_inserts_is_never_undone(
    corrected: bigquery.Client, local_stack: LocalStack
) -> None:
    """Every column added while three writers insert is still in the table's schema after."""
    missing, errors = _widen_while_inserting(corrected, local_stack.dataset)
    assert (set(), []) == (missing, errors)
