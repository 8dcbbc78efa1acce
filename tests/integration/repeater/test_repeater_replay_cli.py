"""``plowline-repeater replay`` as a user runs it, against the local stack."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from plowline_cloud.clients import bigquery_client, storage_client
from plowline_cloud.table_schema import BigQueryTableSchemaStore
from plowline_cloud.write_api import write_client
from plowline_cloud.write_api_pending import ExactlyOnceSink, ensure_ledger
from plowline_core.badrows import Processor, RecoveryErrorRow
from plowline_core.ports import Row
from plowline_core.testing.clock import FixedClock

DEAD_END = "plowline-dead-end"
PROCESSOR = Processor("plowline-repeater", "0.1.0")
OBJECT_A = "2026/11/22/05/20261122T051307.250Z-4f1c2a9e.ndjson"
OBJECT_B = "2026/11/22/06/20261122T060012.031Z-8be07d11.ndjson"
ROOT = Path(__file__).resolve().parents[3]


def _row(**extra: Any) -> dict[str, Any]:
    now = datetime.now(UTC).isoformat()
    return {
        "event_id": str(uuid.uuid4()),
        "etl_tstamp": now,
        "collector_tstamp": now,
        "v_collector": "test",
        "v_etl": "test",
        **extra,
    }


def _line(row: dict[str, Any]) -> bytes:
    error = {"message": "no such field: contexts_x_1.", "location": None, "reason": "invalid"}
    return RecoveryErrorRow(error, orjson.dumps(row).decode()).to_json(PROCESSOR)


def _objects(stack: Any, prefix: str) -> dict[str, bytes]:
    client = storage_client(stack.project, stack.endpoints.storage_url)
    return {
        blob.name[len(prefix) + 1 :]: blob.download_as_bytes()
        for blob in client.list_blobs(DEAD_END, prefix=prefix + "/")
    }


def _counts(stack: Any, event_ids: list[str]) -> dict[str, int]:
    client = bigquery_client(stack.project, stack.endpoints.bigquery_url)
    quoted = ", ".join(f"'{event_id}'" for event_id in event_ids)
    query = (
        f"SELECT event_id, COUNT(*) AS n FROM `{stack.table_ref}` "
        f"WHERE event_id IN ({quoted}) GROUP BY event_id"
    )
    return {row["event_id"]: row["n"] for row in client.query(query).result()}


def _replay(config: Path, prefix: str, *extra: str) -> subprocess.CompletedProcess[str]:
    command = ["uv", "run", "--no-sync", "plowline-repeater", "replay"]
    url = f"gs://{DEAD_END}/{prefix}"
    return subprocess.run(
        [*command, url, "--config", str(config), *extra],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        cwd=ROOT,
        timeout=300,
        check=False,
    )


@pytest.fixture
def seeded(local_stack: Any) -> tuple[str, dict[str, dict[str, Any]], dict[str, bytes]]:
    """Two dead-end objects: three rows that fit, one wrong-typed row, one junk line."""
    prefix = f"replay-{uuid.uuid4().hex[:8]}"
    rows = {name: _row() for name in ("a1", "a2", "b1")}
    rows["wrong"] = _row(txn_id="not a number")
    bodies = {
        OBJECT_A: b"".join(
            line + b"\n"
            for line in [_line(rows["a1"]), _line(rows["wrong"]), b"junk", _line(rows["a2"])]
        ),
        OBJECT_B: _line(rows["b1"]) + b"\n",
    }
    bucket = storage_client(local_stack.project, local_stack.endpoints.storage_url).bucket(DEAD_END)
    for name, body in bodies.items():
        bucket.blob(f"{prefix}/{name}").upload_from_string(body)
    return prefix, rows, bodies


def test_dry_run_changes_nothing(
    local_stack: Any, config_files: tuple[Path, Path], seeded: Any
) -> None:
    """--dry-run reports the plan, inserts nothing and moves nothing."""
    prefix, rows, bodies = seeded
    done = _replay(config_files[0], prefix, "--dry-run")
    expected: tuple[int, dict[str, bytes], dict[str, int], bool] = (0, bodies, {}, True)
    actual = (
        done.returncode,
        _objects(local_stack, prefix),
        _counts(local_stack, [row["event_id"] for row in rows.values()]),
        "4 rows would be sent" in done.stdout,
    )
    assert expected == actual, done.stdout + done.stderr


def test_replay_recovers_files_the_rest_and_moves_the_sources(
    local_stack: Any, config_files: tuple[Path, Path], seeded: Any
) -> None:
    """Rows that fit land once; the wrong-typed row goes to failed/, junk to unrecoverable/."""
    prefix, rows, bodies = seeded
    done = _replay(config_files[0], prefix)
    objects = _objects(local_stack, prefix)
    [failed] = [orjson.loads(line) for line in objects.pop(f"failed/{OBJECT_A}").splitlines()]
    ids = {key: row["event_id"] for key, row in rows.items()}
    expected = (
        1,
        {ids["a1"]: 1, ids["a2"]: 1, ids["b1"]: 1},
        {
            f"replayed/{OBJECT_A}": bodies[OBJECT_A],
            f"replayed/{OBJECT_B}": bodies[OBJECT_B],
            f"unrecoverable/{OBJECT_A}": b"junk\n",
        },
        rows["wrong"],
        "invalid",
    )
    actual = (
        done.returncode,
        _counts(local_stack, list(ids.values())),
        objects,
        orjson.loads(failed["data"]["payload"]),
        failed["data"]["failure"]["error"]["reason"],
    )
    assert expected == actual, done.stdout + done.stderr


def test_a_second_replay_has_nothing_to_do(
    local_stack: Any, config_files: tuple[Path, Path], seeded: Any
) -> None:
    """Run twice: the second finds nothing, exits 0, and every row is in the table once."""
    prefix, rows, _ = seeded
    first = _replay(config_files[0], prefix)
    second = _replay(config_files[0], prefix)
    ids = [rows[key]["event_id"] for key in ("a1", "a2", "b1")]
    expected = (1, 0, True, dict.fromkeys(ids, 1))
    actual = (
        first.returncode,
        second.returncode,
        second.stdout.startswith("Nothing to do"),
        _counts(local_stack, ids),
    )
    assert expected == actual, first.stdout + second.stdout + second.stderr


def test_replay_in_exactly_once_mode_skips_a_row_the_ledger_holds(
    local_stack: Any, config_files: tuple[Path, Path], tmp_path: Path
) -> None:
    """A dead-end row the loader committed meanwhile (exactly-once) is not written a second time."""
    config = json.loads(config_files[0].read_text())
    config["data"]["load"] = {"mode": "STORAGE_WRITE_API", "stream": "exactly-once"}
    config_file = tmp_path / "exactly-once.json"
    config_file.write_text(json.dumps(config))
    row = _row()
    bq = bigquery_client(local_stack.project, local_stack.endpoints.bigquery_url)
    ledger = f"{local_stack.table_ref}_ledger"
    ensure_ledger(bq, ledger)
    store = BigQueryTableSchemaStore(
        bq, local_stack.table_ref, 3600.0, FixedClock(datetime(2026, 1, 1, tzinfo=UTC))
    )
    writes = write_client(local_stack.endpoints.bigquery_grpc_target)
    committed = ExactlyOnceSink(writes, bq, local_stack.table_ref, ledger, store).insert(
        [Row(row["event_id"], row)]
    )
    prefix = f"replay-eo-{uuid.uuid4().hex[:8]}"
    bucket = storage_client(local_stack.project, local_stack.endpoints.storage_url).bucket(DEAD_END)
    bucket.blob(f"{prefix}/{OBJECT_B}").upload_from_string(_line(row) + b"\n")
    done = _replay(config_file, prefix)
    expected = ([], 0, {row["event_id"]: 1})
    actual = (committed, done.returncode, _counts(local_stack, [row["event_id"]]))
    assert expected == actual, done.stdout + done.stderr
