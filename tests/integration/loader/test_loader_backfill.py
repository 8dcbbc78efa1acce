"""``plowline-loader backfill`` as a real command on the local stack: a gzipped archive loads."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import uuid
from pathlib import Path

from google.cloud import bigquery
from plowline_cloud.clients import bigquery_client
from plowline_core.testing.tsv import enriched_line
from plowline_devstack.stack.lifecycle import LocalStack

EXAMPLES = Path(__file__).resolve().parents[3] / "libs/devstack/src/plowline_devstack/examples"


def _table_ids(client: bigquery.Client, table_ref: str) -> set[str]:
    job = client.query(f"SELECT event_id FROM `{table_ref}`", job_retry=None)
    return {row["event_id"] for row in job.result(timeout=60)}


def test_backfill_loads_a_gzipped_archive(local_stack: LocalStack, tmp_path: Path) -> None:
    """Good lines of a .gz archive become rows, bad lines bad rows; the summary counts both."""
    good = [str(uuid.uuid4()) for _ in range(120)]
    lines = [enriched_line(event_id=event_id) for event_id in good]
    lines += ["not an enriched event"] * 5 + [enriched_line(event_id="not-a-uuid")] * 3
    archive = tmp_path / "2026-11-01.tsv.gz"
    archive.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    command = [
        str(Path(sys.executable).parent / "plowline-loader"), "backfill",
        "--config", str(EXAMPLES / "config.json"), "--resolver", str(EXAMPLES / "resolver.json"),
        "--master", "local[1]", str(archive),
    ]  # fmt: skip
    done = subprocess.run(
        command, env={**os.environ, **local_stack.env()}, capture_output=True, timeout=600
    )
    summary = done.stderr.decode(errors="replace")
    client = bigquery_client(local_stack.project, local_stack.endpoints.bigquery_url)

    landed = set(good) & _table_ids(client, local_stack.table_ref)

    expected = (0, True, len(good))
    assert expected == (
        done.returncode,
        f"events={len(lines)} good={len(good)} bad=8 failed=0" in summary,
        len(landed),
    ), summary[-3000:]
