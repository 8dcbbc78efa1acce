"""What each BigQuery write mode costs: the loader's CPU per event and BigQuery's ingestion price.

Run: ``uv run python bench/write_mode_cost.py [--events 30000] [--warmup 5000] [--rounds 1]
[--modes insert-all,write-api-default,exactly-once,file-loads] [--idle-seconds 10]``.
A smoke check (seconds of loading, not a measurement): ``--events 300 --warmup 100
--idle-seconds 1``.

One local stack; the same lines (bench/transform.py's mix, as bench/loader_cpu.py: 0-5
contexts, some unstruct events, ~10% bad lines) go through every mode, the modes as the
demo chooses them (``plowline_devstack.demo.write_modes``: insertAll, Write API default
stream, Write API exactly-once, FILE_LOADS every 5 s):

1. CPU: per mode, bench/loader_cpu.py's round: ``plowline-loader run`` as a process
   (local[*]) with that ``load``, a warm-up, then a backlog of ``--events`` drained with
   the machinery warm. CPU-µs an event: the loader's whole process tree (driver, JVM,
   Python workers, exited processes included; ``process_cpu``), median of ``--rounds``.
2. Bytes: the mix's good rows, written by each mode's sink in this process into a table
   with the mix's columns: the bytes an event each sink puts on the wire (as
   bench/write_modes.py counts them: JSON rows for insertAll and load jobs, protobuf for
   the Write API, the ledger's rows included for exactly-once), over all lines (a bad
   line costs its share of CPU and no BigQuery bytes).
3. Price: BigQuery's list price of ingestion per GiB, and per million events at those
   bytes (insertAll bills each row at 1 KB at least).

Prices (USD, list, multi-region US/EU; check before quoting them):

- insertAll (streaming inserts): $0.01 per 200 MB, each row counted as 1 KB at least;
  batch load jobs: free (the shared slot pool). https://cloud.google.com/bigquery/pricing
  ("Streaming Inserts $0.01 per 200 MB, with individual rows calculated using a 1 KB
  minimum size"; "Loading data: Free"; 1 GB there is 2^30 bytes).
- Storage Write API (the default stream and PENDING streams alike): $0.025 per GiB, the
  first 2 TiB a month free per billing account: the "Data ingestion pricing" section of
  the same page, SKU group https://cloud.google.com/skus/sku-groups/bigquery-storage-api-write-usage
  (summarised at https://help.nops.io/inform/supported-recommendations/use-bigquery-storage-write-api-instead-of-streaming-inserts.md).

The bytes BigQuery bills are its own count of the row's data (its data size calculation),
not the wire bytes measured here: the price column is an estimate of the right order.
Not counted: storage, FILE_LOADS' staging objects in GCS, Pub/Sub, the pods themselves.
"""

from __future__ import annotations

import argparse
import atexit
import shutil
import statistics
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from google.cloud import bigquery
from plowline_cloud.clients import bigquery_client
from plowline_cloud.clock import SystemClock
from plowline_cloud.row_sink import encoded_size
from plowline_cloud.table_schema import BigQueryTableSchemaStore
from plowline_core.ports import Row
from plowline_core.schema.entity import ColumnMode
from plowline_core.transform.row import RowBuilder
from plowline_devstack.demo.write_modes import WRITE_MODES
from plowline_devstack.stack.lifecycle import LocalStack, start_stack
from plowline_devstack.stack.provisioning import StackConfig
from plowline_loader.bootstrap import build_resolver

sys.path.insert(0, str(Path(__file__).parent))
from loader_cpu import _rig, _round, _worker_config
from process_cpu import adopt_orphans
from transform import build_lines
from write_modes import sink_factories

GiB = 1 << 30
STREAMING_MIN_ROW = 1024
"""insertAll bills each row as 1 KB at least."""
PRICE_PER_BYTE = {
    "insert-all": 0.01 / (200 * (1 << 20)),
    "write-api-default": 0.025 / GiB,
    "exactly-once": 0.025 / GiB,
    "file-loads": 0.0,
}
"""List price of ingestion, USD a byte, by mode (see the module docstring for the source)."""
FREE_BYTES_A_MONTH = {"write-api-default": 2 * (1 << 40), "exactly-once": 2 * (1 << 40)}
"""The Storage Write API's free tier: 2 TiB a month per billing account."""
SINKS = {
    "insert-all": "insertAll",
    "write-api-default": "Write API default",
    "exactly-once": "Write API exactly-once",
    "file-loads": "FILE_LOADS",
}
"""bench/write_modes.py's name of each mode's sink."""
FILE_LOADS_TRIGGER_S = 5


@dataclass(frozen=True)
class Cost:
    """One mode's figures."""

    cpu_us: float
    bytes_per_event: float

    def billed_bytes(self, mode: str, good_share: float) -> float:
        """Return the bytes BigQuery bills an event (insertAll: 1 KB a good row at least)."""
        if mode == "insert-all":
            return max(self.bytes_per_event, STREAMING_MIN_ROW * good_share)
        return self.bytes_per_event


def _good_rows(stack: LocalStack, root: Path, lines: list[str]) -> tuple[str, list[Row]]:
    """Return a table with the mix's columns and the good rows of ``lines`` for it."""
    config_file, resolver_file, table_ref, _ = _rig(stack, root)
    builder = RowBuilder(
        build_resolver(_worker_config(config_file, resolver_file)), ColumnMode.FULL
    )
    rows = []
    for line in lines:
        data = getattr(builder.transform_line(line), "data", None)
        if data is not None:
            rows.append(Row(str(data["event_id"]), data))
    return table_ref, rows


def _bytes_per_event(
    stack: LocalStack, mode: str, table_ref: str, rows: list[Row], lines: int
) -> float:
    """Write ``rows`` with ``mode``'s sink; return the bytes it sent, per line."""
    bq = bigquery_client(stack.project, stack.endpoints.bigquery_url)
    table = bigquery.TableReference.from_string(table_ref)
    store = BigQueryTableSchemaStore(bq, table, 3600.0, SystemClock())
    sink = sink_factories(stack, bq)[SINKS[mode]](table, store)
    for start in range(0, len(rows), 2_500):
        failures = sink.insert(rows[start : start + 2_500])
        if failures:
            raise SystemExit(f"{mode}: {failures[0]}")
    sent = getattr(sink, "bytes_sent", None)
    if sent is None:  # insertAll: the JSON rows the request bodies carry
        sent = sum(encoded_size(row) for row in rows)
    return sent / lines


def main() -> None:
    """Measure each mode's CPU and bytes an event on one local stack; print the table."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--events", type=int, default=30_000, help="backlog drained (30000)")
    parser.add_argument("--warmup", type=int, default=5_000, help="events before it (5000)")
    parser.add_argument("--rounds", type=int, default=1, help="rounds per mode; medians (1)")
    parser.add_argument(
        "--idle-seconds", type=float, default=10.0, help="idle window after each drain (10)"
    )
    parser.add_argument(
        "--modes", default=",".join(WRITE_MODES), help=f"comma-separated ({','.join(WRITE_MODES)})"
    )
    args = parser.parse_args()
    modes = args.modes.split(",")
    unknown = [mode for mode in modes if mode not in WRITE_MODES]
    if unknown:
        parser.error(f"unknown modes {unknown}; known: {', '.join(WRITE_MODES)}")
    if args.idle_seconds <= 0:
        parser.error("--idle-seconds must be > 0 (the idle CPU is a rate)")
    # loader_cpu's round reads these; this bench measures neither a budget nor a profile.
    args.max_messages, args.max_bytes, args.profile = None, None, None
    adopt_orphans()
    root = Path(tempfile.mkdtemp(prefix="plowline-bench-cost-"))
    atexit.register(shutil.rmtree, root, True)  # the stack's data and checkpoints: GBs a run
    stack = start_stack(root / "stack", StackConfig())
    bucket = sorted(stack.config.buckets)[0]
    cpu: dict[str, list[float]] = {mode: [] for mode in modes}
    sizes: dict[str, float] = {}
    try:
        lines = build_lines(args.events, 1)
        table_ref, rows = _good_rows(stack, root / "rows", lines)
        for mode in modes:
            sizes[mode] = _bytes_per_event(stack, mode, table_ref, rows, len(lines))
        for number in range(args.rounds):
            for mode in modes:
                env = {}
                if mode == "file-loads":
                    env = {
                        "PLOWLINE_LOADER_STAGING_BUCKET": bucket,
                        "PLOWLINE_LOADER_TRIGGER_INTERVAL": str(FILE_LOADS_TRIGGER_S),
                    }
                load = dict(WRITE_MODES[mode].load)
                where = root / f"round-{number}-{mode}"
                r = _round(stack, where, args, seed=10 * number, load=load, loader_env=env)
                cpu[mode].append(r.per_event_us["total"])
                print(f"  round {number + 1} {mode}: {r.per_event_us['total']:.1f} CPU-µs/event")
    finally:
        stack.stop()
    _print(args, modes, cpu, sizes, len(rows) / len(lines))


def _print(
    args: argparse.Namespace,
    modes: list[str],
    cpu: dict[str, list[float]],
    sizes: dict[str, float],
    good_share: float,
) -> None:
    print(
        f"{args.events:,} events a mode after {args.warmup:,} warm-up, local[*], median of "
        f"{args.rounds} round(s); {good_share:.0%} of the lines good rows"
    )
    print(
        f"{'mode':<20}{'CPU-µs/ev':>10}{'bytes/ev':>10}{'$ per GiB':>11}"
        f"{'$ per M ev':>12}{'free ev/month':>15}"
    )
    for mode in modes:
        cost = Cost(statistics.median(cpu[mode]) if cpu[mode] else float("nan"), sizes[mode])
        billed = cost.billed_bytes(mode, good_share)
        per_million = PRICE_PER_BYTE[mode] * billed * 1e6
        free = FREE_BYTES_A_MONTH.get(mode)
        if free is not None:
            inside = f"{free / billed / 1e6:,.0f} M"
        else:
            inside = "all" if not PRICE_PER_BYTE[mode] else "none"
        print(
            f"{mode:<20}{cost.cpu_us:>10.1f}{cost.bytes_per_event:>10,.0f}"
            f"{PRICE_PER_BYTE[mode] * GiB:>11.3f}{per_million:>12.3f}{inside:>15}"
        )
    print(
        "$ per M ev: list price of ingestion for a million events (insertAll: rows of 1 KB "
        "at least); free ev/month: events a month inside the Write API's 2 TiB free tier"
    )


if __name__ == "__main__":
    main()
