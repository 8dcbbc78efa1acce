"""BigQuery's always-on rules the local stack enforces: schemas only widen, insertIds de-duplicate.

Each scenario runs against the local stack's corrected bqemulator and one served as
shipped (``uncorrected``, from conftest), and the outcomes differ.
"""

from __future__ import annotations

import uuid

import pytest
from google.api_core.exceptions import BadRequest, GoogleAPICallError
from google.cloud import bigquery
from google.cloud.bigquery.retry import DEFAULT_RETRY
from plowline_devstack.stack.lifecycle import LocalStack

RETRY = DEFAULT_RETRY.with_deadline(2.0)
S = bigquery.SchemaField
BASE = [
    S("id", "STRING", mode="REQUIRED"),
    S("n", "INTEGER"),
    S("rec", "RECORD", fields=[S("x", "INTEGER"), S("y", "STRING")]),
]


def _table(client: bigquery.Client, dataset: str) -> bigquery.Table:
    table_id = f"{client.project}.{dataset}.t_{uuid.uuid4().hex[:10]}"
    return client.create_table(bigquery.Table(table_id, schema=BASE), retry=RETRY, timeout=10)


def _patch(client: bigquery.Client, table: bigquery.Table, schema: list[S]) -> str:
    """Patch the schema; return "ok" or the 400's message."""
    table.schema = schema
    try:
        client.update_table(table, ["schema"], retry=RETRY, timeout=10)
    except BadRequest as error:
        return str(error.message)
    return "ok"


_REC = [S("x", "INTEGER"), S("y", "STRING")]
CHANGES = [
    pytest.param(
        [S("id", "STRING", mode="REQUIRED"), S("n", "STRING"), S("rec", "RECORD", fields=_REC)],
        "Field n has changed type from INTEGER to STRING",
        id="type-change",
    ),
    pytest.param(
        [S("id", "STRING", mode="REQUIRED"), S("rec", "RECORD", fields=_REC)],
        "Field n is missing in new schema",
        id="dropped-column",
    ),
    pytest.param(
        [
            S("id", "STRING", mode="REQUIRED"),
            S("n", "INTEGER"),
            S("rec", "RECORD", fields=[_REC[0]]),
        ],
        "Field rec.y is missing in new schema",
        id="dropped-nested-field",
    ),
    pytest.param(
        [
            S("id", "STRING", mode="REQUIRED"),
            S("n", "INTEGER", mode="REQUIRED"),
            S("rec", "RECORD", fields=_REC),
        ],
        "Field n has changed mode from NULLABLE to REQUIRED",
        id="narrowed-mode",
    ),
    pytest.param(
        [*BASE, S("must", "STRING", mode="REQUIRED")],
        "Cannot add required fields to an existing schema. (field: must)",
        id="required-added",
    ),
    pytest.param(
        [
            S("id", "STRING", mode="REQUIRED"),
            S("n", "INTEGER"),
            S("rec", "RECORD", fields=[*_REC, S("z", "BOOLEAN", mode="REQUIRED")]),
        ],
        "Cannot add required fields to an existing schema. (field: rec.z)",
        id="nested-required-added",
    ),
]


@pytest.mark.parametrize(("schema", "reason"), CHANGES)
def test_bigquery_schema_change_that_is_not_widening_is_refused(
    corrected: bigquery.Client,
    uncorrected: bigquery.Client,
    local_stack: LocalStack,
    schema: list[S],
    reason: str,
) -> None:
    """A patch that drops, retypes or narrows is a 400 naming the field (applied uncorrected)."""
    table = _table(corrected, local_stack.dataset)
    shipped = _table(uncorrected, local_stack.dataset)
    outcome = (_patch(corrected, table, schema), _patch(uncorrected, shipped, schema))
    assert (outcome[0].endswith(reason), outcome[1]) == (True, "ok")


@pytest.mark.parametrize(
    "schema",
    [
        pytest.param([*BASE, S("added", "STRING")], id="nullable-column"),
        pytest.param(
            [S("id", "STRING"), S("n", "INT64"), S("rec", "STRUCT", fields=_REC)],
            id="relaxed-required-and-type-aliases",
        ),
        pytest.param(
            [
                S("id", "STRING", mode="REQUIRED"),
                S("n", "INTEGER"),
                S("rec", "RECORD", fields=[*_REC, S("z", "BOOLEAN", mode="REPEATED")]),
            ],
            id="nested-repeated-field",
        ),
    ],
)
def test_bigquery_widening_schema_change_is_applied(
    corrected: bigquery.Client, local_stack: LocalStack, schema: list[S]
) -> None:
    """Adding NULLABLE/REPEATED fields and relaxing REQUIRED still succeed."""
    table = _table(corrected, local_stack.dataset)
    assert _patch(corrected, table, schema) == "ok"


def _count(client: bigquery.Client, table: bigquery.Table) -> int:
    job = client.query(
        f"SELECT COUNT(*) FROM `{table.full_table_id.replace(':', '.')}`",
        job_retry=None,
        retry=RETRY,
    )
    return int(next(iter(job.result(retry=RETRY, timeout=20)))[0])


@pytest.mark.parametrize(
    ("server", "expected"),
    [
        pytest.param("corrected", 3, id="corrected"),
        pytest.param("uncorrected", 5, id="uncorrected"),
    ],
)
def test_bigquery_insert_id_is_stored_once_within_the_window(
    request: pytest.FixtureRequest, local_stack: LocalStack, server: str, expected: int
) -> None:
    """A request re-sent with the same insertIds adds no row (two more rows uncorrected)."""
    client: bigquery.Client = request.getfixturevalue(server)
    table = _table(client, local_stack.dataset)
    rows = [{"id": "a"}, {"id": "b"}]
    first = client.insert_rows_json(table, rows, row_ids=["i-a", "i-b"], retry=RETRY, timeout=10)
    again = client.insert_rows_json(
        table, [*rows, {"id": "c"}], row_ids=["i-a", "i-b", "i-c"], retry=RETRY, timeout=10
    )
    assert ([], [], expected) == (first, again, _count(client, table))


def test_bigquery_insert_id_of_a_refused_row_is_not_remembered(
    corrected: bigquery.Client, local_stack: LocalStack
) -> None:
    """A row refused as invalid can be sent again, fixed, under the same insertId."""
    table = _table(corrected, local_stack.dataset)
    refused = corrected.insert_rows_json(
        table, [{"id": "a", "n": "x"}], row_ids=["i-a"], retry=RETRY, timeout=10
    )
    fixed = corrected.insert_rows_json(
        table, [{"id": "a", "n": 1}], row_ids=["i-a"], retry=RETRY, timeout=10
    )
    assert (len(refused), fixed, _count(corrected, table)) == (1, [], 1)


def test_bigquery_rows_without_insert_id_are_never_deduplicated(
    corrected: bigquery.Client, local_stack: LocalStack
) -> None:
    """Rows sent without an insertId are stored every time they are sent."""
    table = _table(corrected, local_stack.dataset)
    for _ in range(2):
        corrected.insert_rows_json(table, [{"id": "a"}], row_ids=[None], retry=RETRY, timeout=10)
    assert _count(corrected, table) == 2


@pytest.mark.parametrize(
    ("server", "expected"),
    [
        pytest.param("corrected", (400, 0), id="corrected"),
        pytest.param("uncorrected", (None, 50_001), id="uncorrected"),
    ],
)
def test_bigquery_insert_of_more_than_50000_rows_is_refused_whole(
    request: pytest.FixtureRequest,
    local_stack: LocalStack,
    server: str,
    expected: tuple[int | None, int],
) -> None:
    """50,001 rows in one insertAll: refused as invalid, nothing stored (all of them, before)."""
    client: bigquery.Client = request.getfixturevalue(server)
    table = _table(client, local_stack.dataset)
    rows = [{"id": str(n)} for n in range(50_001)]
    status = None
    try:
        client.insert_rows_json(table, rows, row_ids=[None] * len(rows), retry=RETRY, timeout=60)
    except BadRequest as error:
        status = error.code
    assert expected == (status, _count(client, table))


def test_bigquery_insert_over_10_mb_is_refused_whole(
    corrected: bigquery.Client, local_stack: LocalStack
) -> None:
    """An insertAll body over 10 MB: HTTP 413, nothing stored, as BigQuery answers."""
    table = _table(corrected, local_stack.dataset)
    rows = [{"id": "x" * 1_000_000} for _ in range(11)]
    status = None
    try:
        corrected.insert_rows_json(table, rows, row_ids=[None] * 11, retry=RETRY, timeout=60)
    except GoogleAPICallError as error:
        status = error.code
    expected = (413, 0)
    assert expected == (status, _count(corrected, table))
