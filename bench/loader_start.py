"""Measure the loader's start: process start → /readyz → first row in the table, and idle CPU.

Run: ``uv run python bench/loader_start.py [--rounds 3] [--events 200] [--idle-seconds 30]
[--no-bytecode-cache] [--trigger-interval S]``.

One local stack for the whole run. Each round makes a fresh table (atomic columns plus the
three entity columns), a fresh subscription holding ``--events`` enriched events (contexts
and unstruct events resolved from an embedded Iglu registry), and starts
``python -m plowline_loader.cli run`` as a process, as a user would. Measured per round:

- wall seconds from ``Popen`` to ``/readyz`` answering 200 and to the first row in the table;
- CPU seconds of the loader's process tree until that first row (driver Python, the Spark
  JVM, the pyspark daemon and its workers: utime + stime + cutime + cstime from /proc, so
  processes that already exited are counted through their parent);
- idle CPU (cores) over ``--idle-seconds`` once every event is in the table;
- a timeline from the loader's own structured logs (seconds after ``Popen``), last round.

Rounds start after one warm-up round that is not counted: it fills the OS page cache (the
jars) and, unless ``--no-bytecode-cache``, the loader's bytecode cache (a directory of the
bench, ``PYTHONPYCACHEPREFIX``), as the loader's image ships its bytecode compiled
(``UV_COMPILE_BYTECODE=1``). Unless ``--no-class-archive``, the bench first writes the
driver JVM's class archive (``plowline-loader class-archive``) and the loader uses it. With ``--no-bytecode-cache`` every Python process compiles
the modules it imports, as in a checkout run with ``PYTHONDONTWRITEBYTECODE=1``.
Medians are printed. ``--baseline-python`` (another checkout's ``.venv/bin/python``, e.g.
a worktree of main) starts that loader too, without a class archive (with one of its own,
written by its python, given ``--baseline-class-archive``), alternating rounds with this
one: both under the same load, in one run.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from google.cloud import bigquery
from plowline_cloud.clients import bigquery_client, publisher_client, subscriber_client
from plowline_cloud.clock import SystemClock
from plowline_cloud.table_schema import BigQueryTableSchemaStore
from plowline_core.event.fields import ATOMIC_COLUMNS
from plowline_core.iglu.key import SchemaKey
from plowline_core.schema.columns import column_field
from plowline_core.schema.entity import ShredProperty
from plowline_core.testing.tsv import with_entities
from plowline_devstack.stack.lifecycle import LocalStack, start_stack
from plowline_devstack.stack.provisioning import StackConfig
from plowline_devstack.stack.servers import free_port
from process_cpu import cpu_seconds
from process_cpu import tree as process_tree

CTX = SchemaKey.parse("iglu:com.acme/ctx_a/jsonschema/1-0-0")
CLICK = SchemaKey.parse("iglu:com.acme/click/jsonschema/1-0-0")
SCHEMAS = {
    CTX: ({"type": "object", "properties": {"a": {"type": "integer"}}}, ShredProperty.CONTEXTS),
    CLICK: (
        {"type": "object", "properties": {"x": {"type": "string"}}},
        ShredProperty.UNSTRUCT_EVENT,
    ),
}
_MARKS = ("spark session", "loader started", "serving health", "batch loaded")


@dataclass(frozen=True)
class Round:
    """One start's figures (seconds after Popen; CPU in CPU-seconds; idle in cores)."""

    ready_s: float
    first_row_s: float
    cpu_to_first_row_s: float
    idle_cores: float
    timeline: list[tuple[float, str]]
    by_kind: dict[str, float]


def _tree_cpu(pid: int) -> float:
    return cpu_seconds(process_tree(pid))


def _kind(pid: int) -> str:
    """Name a process of the loader's tree: driver, JVM, a pyspark daemon or worker kind."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return "gone"
    words = [a.decode(errors="replace") for a in argv if a]
    if any(w.endswith("java") for w in words[:1]):
        return "JVM"
    if "plowline_loader.cli" in words:
        return "driver (Python)"
    if "pyspark.daemon" in words or "plowline_loader.spark.worker_daemon" in words:
        return f"daemon+forks {words[-1].rsplit('.', 1)[-1]}"
    return " ".join(w.rsplit("/", 1)[-1] for w in words[:3])


def cpu_by_kind(pid: int) -> dict[str, float]:
    """Return the CPU-seconds of ``pid``'s tree by process kind (exited children: in parents)."""
    kinds: dict[str, float] = {}
    for member in process_tree(pid):
        kind = _kind(member)
        kinds[kind] = kinds.get(kind, 0.0) + cpu_seconds([member])
    return kinds


def _line(n: int) -> str:
    unstruct = (CLICK.to_uri(), {"x": str(n)}) if n % 3 == 0 else None
    return with_entities(
        contexts=[(CTX.to_uri(), {"a": n})], unstruct_event=unstruct, event_id=str(uuid.uuid4())
    )


def _rig(stack: LocalStack, root: Path, events: int) -> tuple[Path, Path, str]:
    """Create a table, a registry, a subscription with ``events``; return config, resolver, table."""
    root.mkdir(parents=True)
    name = uuid.uuid4().hex[:10]
    client = bigquery_client(stack.project, stack.endpoints.bigquery_url)
    table_ref = f"{stack.project}.{stack.dataset}.events_{name}"
    schema = [bigquery.SchemaField.from_api_repr(column.to_api()) for column in ATOMIC_COLUMNS]
    client.create_table(bigquery.Table(table_ref, schema=schema))
    store = BigQueryTableSchemaStore(client, table_ref, 60.0, SystemClock())
    store.add_fields([column_field(k, s, shred) for k, (s, shred) in SCHEMAS.items()])
    for key, (json_schema, _) in SCHEMAS.items():
        path = root / "iglu" / "schemas" / key.to_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(json_schema))
    endpoint, project = stack.endpoints.pubsub_target, f"projects/{stack.project}"
    topic = f"{project}/topics/in-{name}"
    publisher = publisher_client(endpoint)
    publisher.create_topic(request={"name": topic})
    subscriber_client(endpoint).create_subscription(
        request={"name": f"{project}/subscriptions/in-{name}", "topic": topic}
    )
    futures = [publisher.publish(topic, _line(n).encode()) for n in range(events)]
    for future in futures:
        future.result(timeout=120)
    config: dict[str, Any] = {
        "schema": "iglu:com.snowplowanalytics.snowplow.storage/bigquery_config/jsonschema/1-0-0",
        "data": {
            "name": "start bench", "id": "31b1559d-d319-4023-aaae-97698238d808",
            "projectId": stack.project, "datasetId": stack.dataset, "tableId": f"events_{name}",
            "input": f"in-{name}", "typesTopic": "types", "typesSubscription": "types-mutator",
            "badRows": "bad-rows", "failedInserts": "failed-inserts",
            "load": {"mode": "STREAMING_INSERTS", "retry": False}, "purpose": "ENRICHED_EVENTS",
        },
    }  # fmt: skip
    resolver = {
        "schema": "iglu:com.snowplowanalytics.iglu/resolver-config/jsonschema/1-0-3",
        "data": {"cacheSize": 100, "cacheTtl": 600, "repositories": [{
            "name": "acme", "priority": 0, "vendorPrefixes": [],
            "connection": {"embedded": {"path": str(root / "iglu")}},
        }]},
    }  # fmt: skip
    config_file, resolver_file = root / "config.json", root / "resolver.json"
    config_file.write_text(json.dumps(config))
    resolver_file.write_text(json.dumps(resolver))
    return config_file, resolver_file, table_ref


def _count(client: bigquery.Client, table_ref: str) -> int:
    row = next(iter(client.query(f"SELECT COUNT(*) AS n FROM `{table_ref}`").result()))
    return int(row["n"])


def _ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1) as reply:
            return bool(reply.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def _timeline(log: Path, started_wall: float) -> list[tuple[float, str]]:
    """Return (seconds after Popen, message) of the loader's marked log lines, first of each."""
    seen: dict[str, float] = {}
    for text in log.read_text(errors="replace").splitlines():
        if not text.startswith("{"):
            continue
        try:
            line = json.loads(text)
        except json.JSONDecodeError:
            continue
        message, stamp = line.get("message"), line.get("timestamp")
        if message in _MARKS and message not in seen and stamp:
            at = datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
            seen[message] = at - started_wall
    return sorted((at, message) for message, at in seen.items())


def _environment(root: Path, bytecode_cache: bool) -> dict[str, str]:
    env = dict(os.environ)
    if bytecode_cache:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(root / "pycache")
    return env


def _class_archive(
    root: Path, args: argparse.Namespace, python: str = sys.executable, name: str = "classes"
) -> Path | None:
    """Write the driver JVM's class archive as the loader's image does; None if not wanted."""
    if args.no_class_archive:
        return None
    path = root / f"{name}.jsa"
    subprocess.run(
        [python, "-m", "plowline_loader.cli", "class-archive", str(path)],
        env=_environment(root, not args.no_bytecode_cache),
        check=True,
        capture_output=True,
    )
    return path


def _loader_pid(spy: int) -> int:
    """Return the pid of the loader that ``py-spy record`` started."""
    for _ in range(100):
        children = process_tree(spy)[1:]
        if children:
            return children[0]
        time.sleep(0.02)
    raise SystemExit("py-spy started no loader")


def _stop(process: subprocess.Popen[bytes], loader: int) -> None:
    """SIGTERM the loader as a pod's stop would; kill what is left after a minute."""
    with contextlib.suppress(ProcessLookupError):  # it exited already
        os.kill(loader, signal.SIGTERM)
    try:
        process.wait(60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)


def _round(
    stack: LocalStack,
    root: Path,
    args: argparse.Namespace,
    archive: Path | None,
    python: str = sys.executable,
) -> Round:
    config, resolver, table_ref = _rig(stack, root, args.events)
    port = free_port()
    argv = [
        python, "-m", "plowline_loader.cli", "run",
        "--config", str(config), "--resolver", str(resolver), "--master", "local[2]",
        "--checkpoint", str(root / "checkpoint"), "--port", str(port),
    ]  # fmt: skip
    if args.trigger_interval is not None:
        argv += ["--trigger-interval", str(args.trigger_interval)]
    client = bigquery_client(stack.project, stack.endpoints.bigquery_url)
    log = root / "loader.log"
    env = {
        **_environment(root.parent, not args.no_bytecode_cache),
        **stack.env(),
        "PLOWLINE_LOADER_LOG_JSON": "true",
    }
    if archive is not None:
        env["PLOWLINE_LOADER_CLASS_ARCHIVE"] = str(archive)
    # As from a shell with the loader's venv active: a baseline loader before the fix of
    # PYSPARK_PYTHON runs its data-source processes with the first python3 on the PATH.
    env["PATH"] = f"{Path(python).parent}{os.pathsep}{env.get('PATH', '')}"
    if args.py_spy:
        profile = root / "profile.txt"
        spy = Path(sys.executable).parent / "py-spy"
        argv = [str(spy), "record", "--subprocesses", "--format", "raw", "-r", "50",
                "-o", str(profile), "--", *argv]  # fmt: skip
    with log.open("wb") as out:
        started_wall, started = time.time(), time.monotonic()
        process = subprocess.Popen(
            argv, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    loader = _loader_pid(process.pid) if args.py_spy else process.pid
    try:
        ready_s = first_s = cpu_first = None
        by_kind: dict[str, float] = {}
        appeared: dict[int, tuple[float, str]] = {}
        while first_s is None or ready_s is None:
            if process.poll() is not None:
                raise SystemExit(f"the loader exited ({process.returncode}); see {log}")
            for member in process_tree(loader):
                if member not in appeared:
                    appeared[member] = (time.monotonic() - started, _kind(member))
            if ready_s is None and _ready(port):
                ready_s = time.monotonic() - started
            if first_s is None and _count(client, table_ref) > 0:
                cpu_first = _tree_cpu(loader)
                by_kind = cpu_by_kind(loader)
                first_s = time.monotonic() - started
            if time.monotonic() - started > args.timeout:
                raise SystemExit(f"no row after {args.timeout} s; see {log}")
            time.sleep(0.05)
        while _count(client, table_ref) < args.events:
            time.sleep(0.25)
        time.sleep(2)  # the last batch's commit
        idle_from, idle_cpu = time.monotonic(), _tree_cpu(loader)
        time.sleep(args.idle_seconds)
        idle = (_tree_cpu(loader) - idle_cpu) / (time.monotonic() - idle_from)
    finally:
        _stop(process, loader)
    assert cpu_first is not None
    timeline = _timeline(log, started_wall) + [
        (at, f"process started: {kind}") for at, kind in appeared.values()
    ]
    return Round(ready_s, first_s, cpu_first, idle, sorted(timeline), by_kind)


def main() -> None:
    """Run a warm-up round and ``--rounds`` measured ones; print medians and a timeline."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3, help="measured starts (3)")
    parser.add_argument("--events", type=int, default=200, help="backlog per start (200)")
    parser.add_argument("--idle-seconds", type=float, default=30.0, help="idle window (30)")
    parser.add_argument("--timeout", type=float, default=180.0, help="give up after (180 s)")
    parser.add_argument(
        "--trigger-interval", type=float, default=None, help="the loader's --trigger-interval"
    )
    parser.add_argument(
        "--no-bytecode-cache",
        action="store_true",
        help="let every Python process compile its imports (PYTHONDONTWRITEBYTECODE=1)",
    )
    parser.add_argument(
        "--no-class-archive",
        action="store_true",
        help="start the loader's JVM without a class archive (plowline-loader class-archive)",
    )
    parser.add_argument(
        "--baseline-python",
        metavar="PYTHON",
        help="also start another checkout's loader (its venv's python), alternating rounds",
    )
    parser.add_argument(
        "--baseline-class-archive",
        action="store_true",
        help="give the baseline loader a class archive of its own too (written by its python)",
    )
    parser.add_argument(
        "--py-spy",
        action="store_true",
        help="profile the loader's Python processes (py-spy raw stacks in each round's dir)",
    )
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="plowline-bench-start-"))
    atexit.register(shutil.rmtree, root, True)  # the stack's data and checkpoints: GBs a run
    stack = start_stack(root / "stack", StackConfig())
    runs: dict[str, list[Round]] = {"this": []}
    loaders = {"this": (sys.executable, True)}
    if args.baseline_python:
        runs["baseline"] = []
        loaders = {"baseline": (args.baseline_python, False), **loaders}
    try:
        archives = {"this": _class_archive(root, args), "baseline": None}
        if args.baseline_python and args.baseline_class_archive:
            archives["baseline"] = _class_archive(root, args, args.baseline_python, "baseline")
        warm_up = argparse.Namespace(**{**vars(args), "idle_seconds": 0})
        for name, (python, _) in loaders.items():
            _round(stack, root / f"warm-up-{name}", warm_up, archives[name], python)
        for n in range(args.rounds):
            for name, (python, _) in loaders.items():
                where = root / f"round-{n}-{name}"
                r = _round(stack, where, args, archives[name], python)
                runs[name].append(r)
                print(
                    f"round {n} {name}: ready {r.ready_s:.1f} s, first row {r.first_row_s:.1f} s,"
                    f" CPU to first row {r.cpu_to_first_row_s:.1f} s, idle {r.idle_cores:.3f} cores",
                    flush=True,
                )
    finally:
        stack.stop()
    for name, rounds in runs.items():
        _report(name, rounds, args)


def _report(name: str, rounds: list[Round], args: argparse.Namespace) -> None:
    cache = "off" if args.no_bytecode_cache else "on"
    baseline_off = name == "baseline" and not args.baseline_class_archive
    classes = "off" if args.no_class_archive or baseline_off else "on"
    print(
        f"\n{name}: medians of {args.rounds} rounds ({args.events} events, bytecode cache "
        f"{cache}, class archive {classes}):"
    )
    for label, values in (
        ("start → /readyz 200", [r.ready_s for r in rounds]),
        ("start → first row", [r.first_row_s for r in rounds]),
        ("CPU-s of the tree until the first row", [r.cpu_to_first_row_s for r in rounds]),
        ("idle cores", [r.idle_cores for r in rounds]),
    ):
        print(f"  {label:<40} {statistics.median(values):8.3f}")
    print("CPU-s until the first row by process kind, last round (a forking daemon's kind")
    print("includes the workers it forked once they exited; live workers count apart):")
    for kind, seconds in sorted(rounds[-1].by_kind.items(), key=lambda item: -item[1]):
        print(f"  {seconds:6.2f}  {kind}")
    print("timeline of the last round (s after Popen: the loader's logs, processes seen):")
    for at, message in rounds[-1].timeline:
        print(f"  {at:6.2f}  {message}")


if __name__ == "__main__":
    main()
