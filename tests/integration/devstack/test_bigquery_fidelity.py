"""Each BigQuery fidelity correction: the defect exists in bqemulator as shipped, and is gone in ours.

Every scenario runs against two servers: the local stack's (corrections on) and a second
``python -m plowline_devstack.bigquery --no-corrections``; the expected outcome differs.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from google.api_core.exceptions import (
    BadRequest,
    Conflict,
    InternalServerError,
    PreconditionFailed,
    RetryError,
)
from google.cloud import bigquery
from google.cloud.bigquery.retry import DEFAULT_RETRY
from plowline_devstack.stack.lifecycle import LocalStack

RETRY = DEFAULT_RETRY.with_deadline(2.0)
HTTP_500 = "HTTP 500"


def _table(
    client: bigquery.Client, dataset: str, schema: list[bigquery.SchemaField]
) -> bigquery.Table:
    table_id = f"{client.project}.{dataset}.t_{uuid.uuid4().hex[:10]}"
    return client.create_table(bigquery.Table(table_id, schema=schema), retry=RETRY, timeout=10)


def _insert(
    client: bigquery.Client, table: bigquery.Table, rows: list[dict[str, Any]], **kw: Any
) -> Any:
    """Insert rows; return the insert errors, or ``HTTP 500`` when the whole request failed."""
    try:
        return client.insert_rows_json(table, rows, retry=RETRY, timeout=10, **kw)
    except (InternalServerError, RetryError):
        return HTTP_500


def _rows(
    client: bigquery.Client, table: bigquery.Table, columns: str = "*"
) -> list[dict[str, Any]]:
    job = client.query(
        f"SELECT {columns} FROM `{table.full_table_id.replace(':', '.')}`",
        job_retry=None,
        retry=RETRY,
    )
    return [dict(row) for row in job.result(retry=RETRY, timeout=20)]


def _invalid(index: int, location: str, message: str) -> dict[str, Any]:
    return {
        "index": index,
        "errors": [
            {"reason": "invalid", "location": location, "debugInfo": "", "message": message}
        ],
    }


def _stopped(index: int) -> dict[str, Any]:
    return {
        "index": index,
        "errors": [{"reason": "stopped", "location": "", "debugInfo": "", "message": ""}],
    }


BASE = [bigquery.SchemaField("id", "STRING", mode="REQUIRED"), bigquery.SchemaField("n", "INTEGER")]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param("corrected", [], id="corrected"),
        pytest.param("uncorrected", HTTP_500, id="uncorrected"),
    ],
)
def test_bigquery_patch_adds_column_to_storage(
    name: str, expected: Any, request: pytest.FixtureRequest, local_stack: LocalStack
) -> None:
    """After tables.patch adds a column, insertAll filling it succeeds (HTTP 500 uncorrected)."""
    client: bigquery.Client = request.getfixturevalue(name)
    table = _table(client, local_stack.dataset, BASE)
    table.schema = [*BASE, bigquery.SchemaField("extra", "STRING")]
    client.update_table(table, ["schema"], retry=RETRY, timeout=10)

    actual = _insert(client, table, [{"id": "a", "n": 1, "extra": "x"}])

    assert expected == actual


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param("corrected", ({"x": 1, "x2": "b"}, [{"y": "c", "y2": 1.5}]), id="corrected"),
        pytest.param("uncorrected", ({"x": 1}, [{"y": "c"}]), id="uncorrected"),
    ],
)
def test_bigquery_patch_adds_nested_fields_to_storage(
    name: str, expected: Any, request: pytest.FixtureRequest, local_stack: LocalStack
) -> None:
    """Sub-fields added by tables.patch to a RECORD and a REPEATED RECORD are stored (dropped uncorrected)."""
    client: bigquery.Client = request.getfixturevalue(name)
    rec = bigquery.SchemaField("rec", "RECORD", fields=[bigquery.SchemaField("x", "INTEGER")])
    reps = bigquery.SchemaField(
        "reps", "RECORD", mode="REPEATED", fields=[bigquery.SchemaField("y", "STRING")]
    )
    table = _table(client, local_stack.dataset, [*BASE, rec, reps])
    wider_rec = bigquery.SchemaField(
        "rec", "RECORD", fields=[*rec.fields, bigquery.SchemaField("x2", "STRING")]
    )
    wider_reps = bigquery.SchemaField(
        "reps",
        "RECORD",
        mode="REPEATED",
        fields=[*reps.fields, bigquery.SchemaField("y2", "FLOAT")],
    )
    table.schema = [*BASE, wider_rec, wider_reps]
    client.update_table(table, ["schema"], retry=RETRY, timeout=10)
    _insert(
        client, table, [{"id": "a", "rec": {"x": 1, "x2": "b"}, "reps": [{"y": "c", "y2": 1.5}]}]
    )

    actual = [(row["rec"], row["reps"]) for row in _rows(client, table, "rec, reps")]

    assert [expected] == actual


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param("corrected", ["a", "b"], id="corrected"),
        pytest.param("uncorrected", ["a", "stale"], id="uncorrected"),
    ],
)
def test_bigquery_stale_etag_update_is_refused(
    name: str, expected: list[str], request: pytest.FixtureRequest, local_stack: LocalStack
) -> None:
    """An update carrying a stale etag fails with 412 and keeps the other writer's column (applied uncorrected)."""
    client: bigquery.Client = request.getfixturevalue(name)
    table = _table(client, local_stack.dataset, [bigquery.SchemaField("a", "STRING")])
    stale = client.get_table(table.reference, retry=RETRY, timeout=10)
    fresh = client.get_table(table.reference, retry=RETRY, timeout=10)
    fresh.schema = [*fresh.schema, bigquery.SchemaField("b", "STRING")]
    client.update_table(fresh, ["schema"], retry=RETRY, timeout=10)
    stale.schema = [*stale.schema, bigquery.SchemaField("stale", "STRING")]
    # Real BigQuery answers 412: the writer must re-read and merge.
    with contextlib.suppress(PreconditionFailed):
        client.update_table(stale, ["schema"], retry=RETRY, timeout=10)

    actual = [f.name for f in client.get_table(table.reference, retry=RETRY, timeout=10).schema]

    assert expected == actual


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param("corrected", True, id="corrected"),
        pytest.param("uncorrected", False, id="uncorrected"),
    ],
)
def test_bigquery_alter_table_ddl_shows_in_catalog(
    name: str, expected: bool, request: pytest.FixtureRequest, local_stack: LocalStack
) -> None:
    """An ``ALTER TABLE … ADD COLUMN`` query job makes tables.get list the column."""
    client: bigquery.Client = request.getfixturevalue(name)
    table = _table(client, local_stack.dataset, BASE)
    ref = table.full_table_id.replace(":", ".")
    job = client.query(f"ALTER TABLE `{ref}` ADD COLUMN added STRING", job_retry=None, retry=RETRY)
    job.result(retry=RETRY, timeout=20)

    actual = "added" in [f.name for f in client.get_table(ref, retry=RETRY, timeout=10).schema]

    assert expected == actual


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param(
            "corrected",
            ([_stopped(0), _invalid(1, "nope", "no such field: nope.")], 0),
            id="corrected",
        ),
        pytest.param("uncorrected", ([], 2), id="uncorrected"),
    ],
)
def test_bigquery_unknown_field_rejects_row_and_stops_request(
    name: str, expected: Any, request: pytest.FixtureRequest, local_stack: LocalStack
) -> None:
    """A row with an unknown field is ``invalid``, the others ``stopped``, nothing inserted."""
    client: bigquery.Client = request.getfixturevalue(name)
    table = _table(client, local_stack.dataset, BASE)

    errors = _insert(client, table, [{"id": "a"}, {"id": "b", "nope": 1}])

    assert expected == (errors, len(_rows(client, table)))


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param(
            "corrected", ([_invalid(1, "nope", "no such field: nope.")], ["a", "c"]), id="corrected"
        ),
        pytest.param("uncorrected", ([], ["a", "b", "c"]), id="uncorrected"),
    ],
)
def test_bigquery_skip_invalid_rows_inserts_the_rest(
    name: str, expected: Any, request: pytest.FixtureRequest, local_stack: LocalStack
) -> None:
    """With skipInvalidRows only the bad row is rejected and the other rows are inserted."""
    client: bigquery.Client = request.getfixturevalue(name)
    table = _table(client, local_stack.dataset, BASE)

    errors = _insert(
        client, table, [{"id": "a"}, {"id": "b", "nope": 1}, {"id": "c"}], skip_invalid_rows=True
    )

    assert expected == (errors, sorted(r["id"] for r in _rows(client, table)))


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param("corrected", ([], True), id="corrected"),
        pytest.param("uncorrected", (HTTP_500, False), id="uncorrected"),
    ],
)
def test_bigquery_auto_timestamp_is_the_insert_time(
    name: str, expected: Any, request: pytest.FixtureRequest, local_stack: LocalStack
) -> None:
    """A TIMESTAMP value ``"AUTO"`` stores the insert time (the request fails uncorrected)."""
    client: bigquery.Client = request.getfixturevalue(name)
    table = _table(
        client,
        local_stack.dataset,
        [bigquery.SchemaField("id", "STRING"), bigquery.SchemaField("load_tstamp", "TIMESTAMP")],
    )
    before = datetime.now(UTC) - timedelta(seconds=5)

    errors = _insert(client, table, [{"id": "a", "load_tstamp": "AUTO"}])
    stamps = [r["load_tstamp"] for r in _rows(client, table)]

    assert expected == (errors, len(stamps) == 1 and stamps[0] >= before)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param(
            "corrected", [_invalid(0, "id", "Missing required field: id.")], id="corrected"
        ),
        pytest.param("uncorrected", [], id="uncorrected"),
    ],
)
def test_bigquery_missing_required_field_rejects_row(
    name: str, expected: Any, request: pytest.FixtureRequest, local_stack: LocalStack
) -> None:
    """A row without a REQUIRED field is rejected ``invalid`` (stored as NULL uncorrected)."""
    client: bigquery.Client = request.getfixturevalue(name)
    table = _table(client, local_stack.dataset, BASE)

    actual = _insert(client, table, [{"n": 1}])

    assert expected == actual


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param(
            "corrected",
            [_stopped(0), _invalid(1, "n", "Cannot convert value to integer (bad value): abc")],
            id="corrected",
        ),
        pytest.param("uncorrected", HTTP_500, id="uncorrected"),
    ],
)
def test_bigquery_wrong_type_is_a_row_error(
    name: str, expected: Any, request: pytest.FixtureRequest, local_stack: LocalStack
) -> None:
    """A wrong-typed value rejects its row, not the whole request with HTTP 500."""
    client: bigquery.Client = request.getfixturevalue(name)
    table = _table(client, local_stack.dataset, BASE)

    actual = _insert(client, table, [{"id": "a", "n": 1}, {"id": "b", "n": "abc"}])

    assert expected == actual


NESTED = [
    *BASE,
    bigquery.SchemaField(
        "rec", "RECORD", fields=[bigquery.SchemaField("x", "INTEGER", mode="REQUIRED")]
    ),
    bigquery.SchemaField(
        "reps", "RECORD", mode="REPEATED", fields=[bigquery.SchemaField("y", "STRING")]
    ),
]


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        pytest.param(
            {"id": "a", "rec": {"x": 1, "z": 2}},
            _invalid(0, "rec.z", "no such field: rec.z."),
            id="record-unknown",
        ),
        pytest.param(
            {"id": "a", "rec": {}},
            _invalid(0, "rec.x", "Missing required field: rec.x."),
            id="record-required",
        ),
        pytest.param(
            {"id": "a", "reps": [{"y": "ok"}, {"w": 1}]},
            _invalid(0, "reps.w", "no such field: reps.w."),
            id="repeated-unknown",
        ),
        pytest.param(
            {"id": "a", "reps": {"y": "one"}},
            _invalid(0, "reps", 'Cannot convert value to array (bad value): {"y": "one"}'),
            id="repeated-not-array",
        ),
        pytest.param(
            {"id": "a", "rec": [{"x": 1}]},
            _invalid(0, "rec", "Array specified for non-repeated field: rec."),
            id="array-for-record",
        ),
        pytest.param(
            {"id": "a", "rec": {"x": "ten"}},
            _invalid(0, "rec.x", "Cannot convert value to integer (bad value): ten"),
            id="record-wrong-type",
        ),
    ],
)
def test_bigquery_nested_checks(
    row: dict[str, Any], expected: Any, corrected: bigquery.Client, local_stack: LocalStack
) -> None:
    """RECORD and REPEATED fields are checked like top-level ones, with dotted locations."""
    table = _table(corrected, local_stack.dataset, NESTED)

    actual = _insert(corrected, table, [row])

    assert [expected] == actual


def test_bigquery_nested_unknown_field_passes_uncorrected(
    uncorrected: bigquery.Client, local_stack: LocalStack
) -> None:
    """Without the correction an unknown field inside a RECORD is dropped silently."""
    table = _table(uncorrected, local_stack.dataset, NESTED)

    actual = _insert(uncorrected, table, [{"id": "a", "rec": {"x": 1, "z": 2}}])

    expected: list[Any] = []
    assert expected == actual


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param("corrected", ["order"], id="corrected"),
        pytest.param("uncorrected", HTTP_500, id="uncorrected"),
    ],
)
def test_bigquery_keyword_named_sub_field_creates_table(
    name: str, expected: Any, request: pytest.FixtureRequest, local_stack: LocalStack
) -> None:
    """A RECORD whose sub-field is named like an SQL keyword can be created (HTTP 500 uncorrected)."""
    client: bigquery.Client = request.getfixturevalue(name)
    schema = [
        bigquery.SchemaField("rec", "RECORD", fields=[bigquery.SchemaField("order", "INTEGER")])
    ]
    try:
        table = _table(client, local_stack.dataset, schema)
    except (InternalServerError, RetryError):
        actual: Any = HTTP_500
    else:
        actual = [f.name for f in table.schema[0].fields]

    assert expected == actual


def test_bigquery_alter_table_struct_column_is_writable(
    corrected: bigquery.Client, local_stack: LocalStack
) -> None:
    """A STRUCT column added by ALTER TABLE (keyword sub-field included) is in tables.get and takes rows."""
    table = _table(corrected, local_stack.dataset, BASE)
    ref = table.full_table_id.replace(":", ".")
    ddl = f"ALTER TABLE `{ref}` ADD COLUMN ctx STRUCT<x INT64, `order` STRING>"
    corrected.query(ddl, job_retry=None, retry=RETRY).result(retry=RETRY, timeout=20)
    table = corrected.get_table(ref, retry=RETRY, timeout=10)
    errors = _insert(corrected, table, [{"id": "a", "ctx": {"x": 1, "order": "first"}}])

    actual = (errors, [row["ctx"] for row in _rows(corrected, table, "ctx")])

    expected: tuple[list[Any], list[dict[str, Any]]] = ([], [{"x": 1, "order": "first"}])
    assert expected == actual


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param("corrected", ["a", "b"], id="corrected"),
        pytest.param("uncorrected", ["a"], id="uncorrected"),
    ],
)
def test_bigquery_insert_copies_no_snapshot(
    name: str, expected: Any, request: pytest.FixtureRequest, local_stack: LocalStack
) -> None:
    """No whole-table copy per insert: time travel between two inserts reads the live table.

    Shipped, every insertAll copies the table into a snapshot, which is what makes
    ``FOR SYSTEM_TIME AS OF`` between the inserts see the first row only (and an insert's
    cost grow with the table).
    """
    client: bigquery.Client = request.getfixturevalue(name)
    table = _table(client, local_stack.dataset, [bigquery.SchemaField("id", "STRING")])
    assert _insert(client, table, [{"id": "a"}]) == []
    time.sleep(1.0)
    between = datetime.now(UTC)
    time.sleep(1.0)
    assert _insert(client, table, [{"id": "b"}]) == []

    job = client.query(
        f"SELECT id FROM `{table.full_table_id.replace(':', '.')}` "
        f"FOR SYSTEM_TIME AS OF TIMESTAMP '{between.isoformat()}' ORDER BY id",
        job_retry=None,
        retry=RETRY,
    )

    assert expected == [row["id"] for row in job.result(retry=RETRY, timeout=20)]


def _listed(client: bigquery.Client, table: bigquery.Table) -> list[dict[str, Any]]:
    rows = client.list_rows(table, retry=RETRY, timeout=10)
    return sorted((dict(row) for row in rows), key=lambda row: str(row["id"]))


BIG = "123456789012345678901234567890.12345678901234567890"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param(
            "corrected",
            ([], [{"id": "a", "big": None}, {"id": "b", "big": Decimal(BIG)}]),
            id="corrected",
        ),
        pytest.param("uncorrected", HTTP_500, id="uncorrected"),
    ],
)
def test_bigquery_bignumeric_column_table_takes_rows(
    name: str, expected: Any, request: pytest.FixtureRequest, local_stack: LocalStack
) -> None:
    """A table with a BIGNUMERIC column is created and loads rows, digits kept (HTTP 500 uncorrected)."""
    client: bigquery.Client = request.getfixturevalue(name)
    schema = [bigquery.SchemaField("id", "STRING"), bigquery.SchemaField("big", "BIGNUMERIC")]
    try:
        table = _table(client, local_stack.dataset, schema)
    except (InternalServerError, RetryError):
        actual: Any = HTTP_500
    else:
        errors = _insert(client, table, [{"id": "a"}, {"id": "b", "big": BIG}])
        actual = (errors, _listed(client, table))

    assert expected == actual


def test_bigquery_bignumeric_column_added_by_patch_takes_rows(
    corrected: bigquery.Client, local_stack: LocalStack
) -> None:
    """A BIGNUMERIC column added by tables.patch reaches storage and takes rows.

    Without ``bignumeric-storage`` our ``table-patch-storage`` ALTER fails (HTTP 500);
    bqemulator as shipped does not alter storage on a patch at all.
    """
    table = _table(corrected, local_stack.dataset, BASE)
    table.schema = [*BASE, bigquery.SchemaField("big", "BIGNUMERIC")]
    corrected.update_table(table, ["schema"], retry=RETRY, timeout=10)

    assert _insert(corrected, table, [{"id": "a", "big": BIG}]) == []


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param(
            "corrected",
            ([], [{"id": "a", "at": None}, {"id": "b", "at": "POINT (1 2)"}]),
            id="corrected",
        ),
        pytest.param("uncorrected", HTTP_500, id="uncorrected"),
    ],
)
def test_bigquery_geography_column_table_takes_rows(
    name: str, expected: Any, request: pytest.FixtureRequest, local_stack: LocalStack
) -> None:
    """Rows load into a table with a GEOGRAPHY column, WKT kept (HTTP 500 uncorrected, offline)."""
    client: bigquery.Client = request.getfixturevalue(name)
    schema = [bigquery.SchemaField("id", "STRING"), bigquery.SchemaField("at", "GEOGRAPHY")]
    table = _table(client, local_stack.dataset, schema)
    errors = _insert(client, table, [{"id": "a"}, {"id": "b", "at": "POINT(1 2)"}])
    actual = errors if errors == HTTP_500 else (errors, _listed(client, table))

    assert expected == actual


def test_bigquery_patch_adds_range_column_to_storage(
    corrected: bigquery.Client, local_stack: LocalStack
) -> None:
    """A RANGE column added by tables.patch (its element type carried to storage) takes rows."""
    table = _table(corrected, local_stack.dataset, BASE)
    span = bigquery.SchemaField.from_api_repr(
        {"name": "span", "type": "RANGE", "rangeElementType": {"type": "DATE"}}
    )
    table.schema = [*BASE, span]
    corrected.update_table(table, ["schema"], retry=RETRY, timeout=10)
    row = {"id": "a", "span": {"start": "2026-01-01", "end": "2026-02-01"}}

    assert _insert(corrected, table, [row]) == []


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param(
            "corrected",
            [
                _stopped(0),
                _invalid(1, "at", 'Cannot convert value to geography (bad value): {"x": 1}'),
            ],
            id="corrected",
        ),
        pytest.param("uncorrected", HTTP_500, id="uncorrected"),
    ],
)
def test_bigquery_object_in_geography_column_is_a_row_error(
    name: str, expected: Any, request: pytest.FixtureRequest, local_stack: LocalStack
) -> None:
    """An object given to a GEOGRAPHY column rejects its row, not the whole request."""
    client: bigquery.Client = request.getfixturevalue(name)
    schema = [bigquery.SchemaField("id", "STRING"), bigquery.SchemaField("at", "GEOGRAPHY")]
    table = _table(client, local_stack.dataset, schema)

    actual = _insert(client, table, [{"id": "a", "at": "POINT(1 2)"}, {"id": "b", "at": {"x": 1}}])

    assert expected == actual


OPTIONED = [
    {"name": "code", "type": "STRING", "mode": "NULLABLE", "maxLength": "8", "collation": "und:ci"},
    {"name": "price", "type": "NUMERIC", "mode": "NULLABLE", "precision": "10", "scale": "2"},
    {
        "name": "rec",
        "type": "RECORD",
        "mode": "NULLABLE",
        "fields": [
            {
                "name": "seen",
                "type": "TIMESTAMP",
                "mode": "NULLABLE",
                "defaultValueExpression": "CURRENT_TIMESTAMP()",
            },
            {
                "name": "big",
                "type": "BIGNUMERIC",
                "mode": "NULLABLE",
                "roundingMode": "ROUND_HALF_EVEN",
            },
        ],
    },
    {"name": "span", "type": "RANGE", "mode": "NULLABLE", "rangeElementType": {"type": "DATE"}},
]
STRIPPED = [
    {"name": "code", "type": "STRING", "mode": "NULLABLE"},
    {"name": "price", "type": "NUMERIC", "mode": "NULLABLE"},
    {
        "name": "rec",
        "type": "RECORD",
        "mode": "NULLABLE",
        "fields": [
            {"name": "seen", "type": "TIMESTAMP", "mode": "NULLABLE"},
            {"name": "big", "type": "BIGNUMERIC", "mode": "NULLABLE"},
        ],
    },
]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param("corrected", OPTIONED, id="corrected"),
        pytest.param("uncorrected", STRIPPED, id="uncorrected"),
    ],
)
def test_bigquery_column_options_survive_create_and_get(
    name: str, expected: Any, request: pytest.FixtureRequest, local_stack: LocalStack
) -> None:
    """Column options come back as given (and a RANGE's element type as BigQuery writes it)."""
    client: bigquery.Client = request.getfixturevalue(name)
    schema = [bigquery.SchemaField.from_api_repr(column) for column in OPTIONED[:2]]
    if name == "corrected":  # BIGNUMERIC needs bignumeric-storage, absent uncorrected
        schema.extend(bigquery.SchemaField.from_api_repr(column) for column in OPTIONED[2:])
    table = _table(client, local_stack.dataset, schema)

    actual = [f.to_api_repr() for f in client.get_table(table, retry=RETRY).schema]

    assert expected[: len(schema)] == actual


def test_bigquery_column_options_survive_a_patch(
    corrected: bigquery.Client, local_stack: LocalStack
) -> None:
    """A patch that adds a column sends the options back; they are still there afterwards."""
    table = _table(
        corrected,
        local_stack.dataset,
        [bigquery.SchemaField.from_api_repr(column) for column in OPTIONED],
    )
    table.schema = [*table.schema, bigquery.SchemaField("extra", "STRING")]
    corrected.update_table(table, ["schema"], retry=RETRY, timeout=10)

    actual = [f.to_api_repr() for f in corrected.get_table(table, retry=RETRY).schema][:-1]

    expected = OPTIONED
    assert expected == actual


def _patched_schema(client: bigquery.Client, table: bigquery.Table) -> str:
    """Send the table's new schema; return ``400`` when refused, else the stored field types."""
    try:
        client.update_table(table, ["schema"], retry=RETRY, timeout=30)
    except BadRequest:
        return "400"
    stored = client.get_table(table.reference, retry=RETRY, timeout=10).schema
    return ",".join(f"{f.name[:8]}:{f.field_type}" for f in stored)


_WIDE_RECORD = bigquery.SchemaField(
    "wide", "RECORD", fields=[bigquery.SchemaField(f"f{i}", "STRING") for i in range(10_001)]
)


@pytest.mark.parametrize(
    ("change", "name", "expected"),
    [
        pytest.param(
            [bigquery.SchemaField("x" * 301, "STRING")], "corrected", "400", id="301-name"
        ),
        pytest.param(
            [bigquery.SchemaField("x" * 301, "STRING")],
            "uncorrected",
            "id:STRING,xxxxxxxx:STRING",
            id="301-name-uncorrected",
        ),
        pytest.param([_WIDE_RECORD], "corrected", "400", id="10001-leaves"),
        pytest.param(
            [_WIDE_RECORD], "uncorrected", "id:STRING,wide:RECORD", id="10001-uncorrected"
        ),
    ],
)
def test_bigquery_refuses_a_schema_past_its_limits(
    change: list[bigquery.SchemaField],
    name: str,
    expected: str,
    request: pytest.FixtureRequest,
    local_stack: LocalStack,
) -> None:
    """A name over 300 characters or 10,001 leaf fields: 400 (stored uncorrected)."""
    client: bigquery.Client = request.getfixturevalue(name)
    base = [bigquery.SchemaField("id", "STRING")]
    table = _table(client, local_stack.dataset, base)
    table.schema = [*base, *change]

    assert expected == _patched_schema(client, table)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param("corrected", (409, "duplicate"), id="corrected"),
        pytest.param("uncorrected", (200, "ran again"), id="uncorrected"),
    ],
)
def test_a_job_id_used_twice_is_refused_as_a_duplicate(
    name: str, expected: Any, request: pytest.FixtureRequest
) -> None:
    """A second jobs.insert with a job id already used answers 409 duplicate (run again uncorrected)."""
    client: bigquery.Client = request.getfixturevalue(name)
    job_id = f"dup_{uuid.uuid4().hex}"
    body = {
        "jobReference": {"projectId": client.project, "jobId": job_id},
        "configuration": {"query": {"query": "SELECT 1 AS x", "useLegacySql": False}},
    }
    path = f"/projects/{client.project}/jobs"
    client._connection.api_request(method="POST", path=path, data=body)
    try:
        client._connection.api_request(method="POST", path=path, data=body)
        actual = (200, "ran again")
    except Conflict as conflict:
        actual = (conflict.code, str(conflict.errors[0]["reason"]))

    assert expected == actual
