"""Benchmark the BigQuery write modes on the local stack: events/s and bytes sent per event.

For the same N realistic rows (enriched TSV lines from ``plowline_core.testing.tsv`` turned
into BigQuery-JSON rows by ``RowBuilder``, atomic columns only), each mode loads a fresh
table; printed side by side, median of ``--repeat`` runs:

  insertAll (BigQueryRowSink), Write API default stream, Write API exactly-once (PENDING
  streams + ledger), FILE_LOADS (NDJSON staged in GCS + load job).

Bytes sent are the row payload each sink puts on the wire (JSON for insertAll and loads,
protobuf for the Write API, ledger rows included for exactly-once), not HTTP/gRPC framing.

Run: ``uv run python bench/write_modes.py [--rows 20000] [--repeat 3] [--batch 2500]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from google.cloud import bigquery
from google.cloud.bigquery.retry import DEFAULT_RETRY
from plowline_cloud.clients import bigquery_client, storage_client
from plowline_cloud.load_jobs import FileLoadSink
from plowline_cloud.row_sink import BigQueryRowSink, encoded_size
from plowline_cloud.table_schema import BigQueryTableSchemaStore
from plowline_cloud.write_api import WriteApiRowSink, write_client
from plowline_cloud.write_api_pending import ExactlyOnceSink, ensure_ledger
from plowline_core.event.fields import ATOMIC_COLUMNS
from plowline_core.iglu.config import EmbeddedConnection, RepositoryRef
from plowline_core.iglu.resolver import Resolver
from plowline_core.ports import Row
from plowline_core.testing.clock import FixedClock
from plowline_core.testing.registry import InMemoryRegistry
from plowline_core.testing.tsv import enriched_line
from plowline_core.transform.row import RowBuilder
from plowline_devstack import servers
from plowline_devstack.provisioning import StackConfig
from plowline_devstack.stack import start_stack

CLOCK = FixedClock(datetime(2024, 1, 1, tzinfo=UTC))


def make_rows(count: int) -> list[Row]:
    """Return ``count`` good rows from realistic enriched lines (unique event ids)."""
    registry = InMemoryRegistry("empty")  # atomic rows only: no entity needs a schema
    ref = RepositoryRef(registry.name, 0, (), EmbeddedConnection("/nonexistent"))
    builder = RowBuilder(Resolver([(ref, registry)], CLOCK))
    rows: list[Row] = []
    for _ in range(count):
        built = builder.transform_line(enriched_line(event_id=str(uuid.uuid4())))
        data = getattr(built, "data", None)
        if data is not None:
            rows.append(Row(str(data["event_id"]), data))
    return rows


def _bigquery_with_gcs(project: str, storage_url: str, log: Path) -> tuple[Any, int, int]:
    ports = {"port": servers.free_port(), "grpc_port": servers.free_port()}
    os.environ["STORAGE_EMULATOR_HOST"] = storage_url  # the load-source correction reads it
    server = servers.launch(
        servers.command(servers.BIGQUERY, "127.0.0.1", ports, project, None),
        servers.BIGQUERY,
        ports,
        log,
    )
    return server, ports["port"], ports["grpc_port"]


def _ready(bq: bigquery.Client) -> None:
    for _ in range(300):
        try:
            bq.create_dataset(
                "snowplow", exists_ok=True, retry=DEFAULT_RETRY.with_deadline(1), timeout=1
            )
            return
        except Exception:
            time.sleep(0.1)
    raise SystemExit("bqemulator did not answer")


def _fresh_table(bq: bigquery.Client) -> bigquery.TableReference:
    name = f"{bq.project}.snowplow.bench_{uuid.uuid4().hex[:10]}"
    schema = [bigquery.SchemaField.from_api_repr(f.to_api()) for f in ATOMIC_COLUMNS]
    bq.create_table(bigquery.Table(name, schema=schema))
    return bigquery.TableReference.from_string(name)


Factory = Callable[[bigquery.TableReference, BigQueryTableSchemaStore], Any]


def run_mode(
    bq: bigquery.Client, factory: Factory, rows: list[Row], batch: int
) -> tuple[float, float]:
    """Load ``rows`` into a fresh table with one sink; return (events/s, bytes per event)."""
    table = _fresh_table(bq)
    store = BigQueryTableSchemaStore(bq, table, 3600.0, CLOCK)
    sink = factory(table, store)
    started = time.perf_counter()
    for start in range(0, len(rows), batch):
        failures = sink.insert(rows[start : start + batch])
        if failures:
            raise SystemExit(f"{type(sink).__name__}: {failures[0]}")
    elapsed = time.perf_counter() - started
    sent = getattr(sink, "bytes_sent", None)
    if sent is None:  # insertAll: the JSON rows the request bodies carry
        sent = sum(encoded_size(row) for row in rows)
    bq.delete_table(table, not_found_ok=True)
    return len(rows) / elapsed, sent / len(rows)


def main() -> None:
    """Start a local stack, run every mode ``--repeat`` times, print the medians."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--batch", type=int, default=2_500, help="rows per insert() call")
    args = parser.parse_args()
    rows = make_rows(args.rows)
    work = Path(tempfile.mkdtemp(prefix="plowline-bench-"))
    stack = start_stack(work / "stack", StackConfig(), persistent=False)
    server, port, grpc_port = _bigquery_with_gcs(
        stack.endpoints.project, stack.endpoints.storage_url, work / "bq.log"
    )
    try:
        bq = bigquery_client(stack.endpoints.project, f"http://127.0.0.1:{port}")
        _ready(bq)
        writes = write_client(f"127.0.0.1:{grpc_port}")
        gcs = storage_client(stack.endpoints.project, stack.endpoints.storage_url)
        bucket = next(iter(stack.config.buckets))

        def exactly_once(table: bigquery.TableReference, store: Any) -> ExactlyOnceSink:
            ledger = f"{table.project}.{table.dataset_id}.{table.table_id}_ledger"
            ensure_ledger(bq, ledger)
            return ExactlyOnceSink(writes, bq, table, ledger, store)

        modes: dict[str, Factory] = {
            "insertAll": lambda t, s: BigQueryRowSink(bq, t, s),
            "Write API default": lambda t, s: WriteApiRowSink(writes, t, s),
            "Write API exactly-once": exactly_once,
            "FILE_LOADS": lambda t, s: FileLoadSink(
                bq, gcs, bucket, t, s, BigQueryRowSink(bq, t, s)
            ),
        }
        results = {
            name: [run_mode(bq, f, rows, args.batch) for _ in range(args.repeat)]
            for name, f in modes.items()
        }
    finally:
        servers.stop(server)
        stack.stop()
    print(f"{len(rows)} rows, {args.batch} rows per insert(), median of {args.repeat}")
    print(f"{'mode':<24}{'events/s':>12}{'bytes/event':>14}")
    for name, runs in results.items():
        rate = statistics.median(r[0] for r in runs)
        size = statistics.median(r[1] for r in runs)
        print(f"{name:<24}{rate:>12,.0f}{size:>14,.0f}")


if __name__ == "__main__":
    main()
