"""``plowline demo``: the whole pipeline on this machine, every event accounted for.

Starts the local stack in a data directory (default ``.plowline/demo``, emptied first),
creates the events table with ``plowline-mutator create``, runs the loader, mutator,
repeater and dead-letter writer as separate processes (logs in ``<data dir>/logs``),
publishes a generated stream (``plowline dev generate``, ~5% malformed), shows progress,
waits until every event is a row, a bad row or a dead-end row, prints a summary read from
BigQuery, Cloud Storage and the services' ``/metrics`` with a PASS/FAIL line, and stops
everything (unless ``--keep``).

Exit codes: 0 PASS, 1 FAIL (counts do not add up, or a timeout), 2 could not start.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import TextIO

from plowline_core.errors import PlowlineError
from plowline_core.event.fields import ATOMIC_COLUMNS

from plowline_devstack import stack as stacks
from plowline_devstack.cli import Command
from plowline_devstack.clients import publisher_client
from plowline_devstack.demo_report import Accounting, Summary, SystemsReader, sample_queries
from plowline_devstack.demo_services import (
    BAD_ROWS_PREFIX,
    DEAD_END_PREFIX,
    LOADER,
    MUTATOR,
    REPEATER,
    SERVICE_NAMES,
    DemoPaths,
    ServiceProcess,
    ServiceSpec,
    launch,
    service_commands,
    service_env,
    wait_done,
    wait_ready,
)
from plowline_devstack.generate import GeneratedLine, generate, publish
from plowline_devstack.stack_config import StackConfig

EXAMPLES = Path(__file__).resolve().parent / "examples"
DEFAULT_DATA_DIR = Path(".plowline/demo")
_SERVICES_FILE = "services.json"
_STOP_ORDER = (LOADER, REPEATER, "deadletter", MUTATOR)


@dataclass(frozen=True, slots=True)
class Progress:
    """One look at the systems while events flow."""

    published: int
    rows: int
    distinct_rows: int
    bad_rows: int
    dead_ended: int
    failed_inserts: float | None
    columns_added: int

    @property
    def accounted(self) -> int:
        """Events found somewhere: distinct rows, bad rows and dead-ended rows."""
        return self.distinct_rows + self.bad_rows + self.dead_ended

    def line(self, total: int, elapsed: float) -> str:
        """Return the progress as one line."""
        failed = "?" if self.failed_inserts is None else f"{self.failed_inserts:.0f}"
        return (
            f"[{elapsed:5.1f} s] published {self.published}/{total}  rows {self.distinct_rows}"
            f"  bad rows {self.bad_rows}  failed inserts {failed}"
            f"  columns added {self.columns_added}  dead-ended {self.dead_ended}"
        )


class DemoRun:
    """A stack, the four services and a reader: started, fed, watched and stopped."""

    def __init__(
        self, work_dir: Path, *, outlive: bool = False, env: Mapping[str, str] | None = None
    ) -> None:
        self.work_dir = work_dir.resolve()
        self.outlive = outlive
        self.extra_env = dict(env or {})
        self.stack: stacks.LocalStack | None = None
        self.services: dict[str, ServiceProcess] = {}
        self.specs: dict[str, ServiceSpec] = {}
        self._reader: SystemsReader | None = None
        self.initial_columns = [column.name for column in ATOMIC_COLUMNS]

    @property
    def reader(self) -> SystemsReader:
        """The reader of the running stack."""
        if self._reader is None:
            raise RuntimeError("the demo stack is not started")
        return self._reader

    @property
    def paths(self) -> DemoPaths:
        """The configs, work directory and buckets the services use."""
        buckets = self._stack().config.buckets
        return DemoPaths(
            EXAMPLES / "config.json", EXAMPLES / "resolver.json", self.work_dir, *buckets
        )

    def start(self, timeout: float = 180.0, say: Callable[[str], None] = lambda text: None) -> None:
        """Start the stack, create the table, start the services and wait until all are ready."""
        say("starting the local stack (Pub/Sub, BigQuery, Cloud Storage stand-ins)")
        self.stack = stacks.start_stack(self.work_dir / "stack", StackConfig(), persistent=False)
        self._reader = SystemsReader(self.stack)
        self.initial_columns = self.reader.columns()
        env = service_env(self.stack, self.extra_env)
        self.specs = service_commands(self.paths)
        say(
            "creating the events table (plowline-mutator create); starting the loader, mutator, "
            "repeater and dead-letter writer as processes; waiting for /readyz"
        )
        config = str(self.paths.config)
        create = ServiceSpec(
            "mutator-create", "plowline-mutator", ("create", "--config", config), 0
        )
        created = launch(create, env, self.log_dir)
        for name in SERVICE_NAMES:
            self.services[name] = launch(self.specs[name], env, self.log_dir, outlive=self.outlive)
        wait_done(created, timeout)
        wait_ready(list(self.services.values()), timeout)

    @property
    def log_dir(self) -> Path:
        """Where each service's log is written."""
        return self.work_dir / "logs"

    def restart(self, name: str, *, kill: bool = True, timeout: float = 180.0) -> ServiceProcess:
        """Kill (SIGKILL) or stop a service, start it again and wait until it is ready."""
        old = self.services[name]
        if kill:
            old.kill()
        else:
            old.stop()
        new = launch(
            self.specs[name],
            service_env(self._stack(), self.extra_env),
            self.log_dir,
            outlive=self.outlive,
        )
        self.services[name] = new
        wait_ready([new], timeout)
        return new

    def publish(
        self,
        lines: Sequence[GeneratedLine],
        rate: float,
        on_progress: Callable[[int], None] = lambda sent: None,
    ) -> int:
        """Publish ``lines`` to the enriched topic; return once the topic holds them all."""
        stack = self._stack()
        publisher = publisher_client(stack.endpoints)
        try:
            return publish(
                lines, publisher, stack.topic_path("enriched"), rate=rate, on_progress=on_progress
            )
        finally:
            publisher.stop()

    def progress(self, published: int) -> Progress:
        """Look at the table, the buckets and the loader's counters once."""
        paths, reader = self.paths, self.reader
        rows, distinct = reader.row_counts()
        bad = reader.bad_rows(paths.bad_rows_bucket, BAD_ROWS_PREFIX)
        dead = reader.bad_rows(paths.dead_end_bucket, DEAD_END_PREFIX)
        added = len(set(reader.columns()) - set(self.initial_columns))
        failed = self.services[LOADER].counter("loader_failed_inserts_total")
        return Progress(published, rows, distinct, bad.rows, dead.rows, failed, added)

    def account(self, lines: Sequence[GeneratedLine]) -> Accounting:
        """Place every published line's event id: table row, bad row or dead-end row."""
        paths, reader = self.paths, self.reader
        return Accounting.of(
            (g.event_id for g in lines if g.good),
            (g.event_id for g in lines if not g.good),
            reader.row_ids(),
            reader.bad_rows(paths.bad_rows_bucket, BAD_ROWS_PREFIX).ids,
            reader.bad_rows(paths.dead_end_bucket, DEAD_END_PREFIX).ids,
        )

    def summary(self, lines: Sequence[GeneratedLine]) -> Summary:
        """Read the final figures from BigQuery, Cloud Storage and the services' metrics."""
        paths, reader = self.paths, self.reader
        rows, distinct = reader.row_counts()
        bad = reader.bad_rows(paths.bad_rows_bucket, BAD_ROWS_PREFIX)
        dead = reader.bad_rows(paths.dead_end_bucket, DEAD_END_PREFIX)
        columns = reader.columns()
        added = [c for c in columns if c not in set(self.initial_columns)]
        summary = Summary(
            published=len(lines),
            rows=rows,
            distinct_rows=distinct,
            bad_rows=bad.rows,
            bad_row_objects=bad.objects,
            dead_ended=dead.rows,
            columns_added=added,
            reinserted=self.services[REPEATER].counter("repeater_reinserted_total"),
            mutator_columns=self.services[MUTATOR].counter("mutator_columns_added_total"),
            accounting=self.account(lines),
        )
        for title, sql in sample_queries(self._stack().table_ref, added):
            summary.samples.append((title, *reader.sample(sql)))
        return summary

    def diagnose(self, accounting: Accounting) -> list[str]:
        """Say what is missing and what each service reports about it."""
        missing = accounting.missing
        out = [
            f"missing {len(missing)} events ({len(missing & accounting.good)} good, "
            f"{len(missing & accounting.bad)} malformed); e.g. {sorted(missing)[:3]}"
        ]
        figures = {
            LOADER: ("loader_events_in_total", "loader_good_total", "loader_bad_total",
                     "loader_failed_inserts_total"),
            REPEATER: ("repeater_reinserted_total", "repeater_waiting", "repeater_dead_ended_total"),
            "deadletter": ("deadletter_rows_written_total", "deadletter_buffered"),
            MUTATOR: ("mutator_types_received_total", "mutator_columns_added_total"),
        }  # fmt: skip
        for name, suffixes in figures.items():
            service = self.services.get(name)
            if service is None:
                continue
            state = "running" if service.alive() else f"exited {service.process.returncode}"
            said = ", ".join(f"{s} {service.counter(s)}" for s in suffixes)
            out.append(f"  {name:<10} {state}: {said}; log {service.log}")
        return out

    def stop(self, *, keep: bool = False) -> dict[str, int]:
        """Stop the services (SIGTERM) and the stack unless ``keep``; return exit codes."""
        codes: dict[str, int] = {}
        if self._reader is not None:
            self._reader.close()
        if keep:
            self._record_kept()
            return codes
        for name in _STOP_ORDER:
            if name in self.services:
                codes[name] = self.services[name].stop()
        if self.stack is not None:
            self.stack.stop()
        return codes

    def _record_kept(self) -> None:
        stack = self._stack()
        stack.save()
        pids = {name: s.process.pid for name, s in self.services.items()}
        (self.work_dir / _SERVICES_FILE).write_text(json.dumps(pids, indent=2) + "\n")

    def _stack(self) -> stacks.LocalStack:
        if self.stack is None:
            raise RuntimeError("the demo stack is not started")
        return self.stack


def clear_previous(work_dir: Path) -> None:
    """Stop what a previous ``--keep`` demo left running in ``work_dir`` and empty it."""
    kept = work_dir / _SERVICES_FILE
    if kept.is_file():
        for pid in json.loads(kept.read_text()).values():
            _stop_if_ours(int(pid))
    if (work_dir / "stack").is_dir():
        stacks.down(work_dir / "stack")
    if work_dir.is_dir():
        shutil.rmtree(work_dir)


def _stop_if_ours(pid: int) -> None:
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return
    if b"plowline-" in command:  # the pid was not reused by someone else's process
        os.kill(pid, signal.SIGTERM)


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--events", type=int, default=2000, help="events to publish (default 2000)")
    parser.add_argument("--keep", action="store_true", help="leave the stack and services running")
    parser.add_argument(
        "--rate", type=float, default=500.0, help="events a second published (default %(default)s)"
    )
    parser.add_argument("--seed", type=int, default=2024, help="generator seed (default 2024)")
    parser.add_argument(
        "--timeout",
        type=float,
        default=120.0,
        help="seconds to wait, once published, for every event to be accounted for",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=DEFAULT_DATA_DIR,
        help="stack data, service logs and checkpoints; emptied first (default %(default)s)",
    )


def _run(args: argparse.Namespace) -> int:
    began = time.monotonic()
    err = sys.stderr

    def say(text: str) -> None:
        print(f"[{time.monotonic() - began:5.1f} s] {text}", file=err, flush=True)

    signal.signal(signal.SIGTERM, _interrupt)
    clear_previous(args.data_dir)
    demo = DemoRun(args.data_dir, outlive=args.keep)
    code = 2
    try:
        demo.start(say=say)
        code = _feed_and_check(demo, args, say, began)
    except PlowlineError as error:
        print(f"plowline demo: {error}", file=err)
    except KeyboardInterrupt:
        print("\nplowline demo: interrupted", file=err)
        code = 130
    finally:
        say("stopping everything" if not args.keep else "leaving everything running (--keep)")
        codes = demo.stop(keep=args.keep)
        unclean = {name: c for name, c in codes.items() if c != 0}
        if unclean:
            print(f"services that did not exit 0 on SIGTERM: {unclean}", file=err)
    if args.keep and demo.stack is not None:
        _print_kept(demo)
    print(f"elapsed {time.monotonic() - began:.1f} s", flush=True)
    return code


def _feed_and_check(
    demo: DemoRun, args: argparse.Namespace, say: Callable[[str], None], began: float
) -> int:
    lines = list(
        generate(args.events, start=datetime.now(UTC), seed=args.seed, rate=args.rate or 1000.0)
    )
    malformed = sum(1 for g in lines if not g.good)
    say(f"publishing {len(lines)} events ({malformed} malformed) to the enriched topic")
    sent = [0]
    publisher = threading.Thread(
        target=lambda: sent.__setitem__(
            0, demo.publish(lines, args.rate, lambda n: sent.__setitem__(0, n))
        ),
        daemon=True,
    )
    publisher.start()
    done = _watch(demo, len(lines), publisher, sent, args.timeout, began)
    summary = demo.summary(lines)
    print()
    for line in summary.lines():
        print(line)
    if not done:
        for line in demo.diagnose(summary.accounting):
            print(line)
    return 0 if done and summary.accounting.balanced else 1


def _watch(
    demo: DemoRun,
    total: int,
    publisher: threading.Thread,
    sent: list[int],
    timeout: float,
    began: float,
) -> bool:
    """Show progress until every event is accounted for or ``timeout`` after publishing."""
    out: TextIO = sys.stderr
    tty = out.isatty()
    deadline: float | None = None
    last_line = 0.0
    while True:
        progress = demo.progress(sent[0])
        now = time.monotonic()
        text = progress.line(total, now - began)
        if tty:
            print(f"\r{text}\033[K", end="", file=out, flush=True)
        elif now - last_line >= 5.0:
            print(text, file=out, flush=True)
            last_line = now
        if not publisher.is_alive():
            deadline = deadline or now + timeout
            if progress.accounted >= total:
                _finish(out, tty, text)
                return True
            if now > deadline:
                _finish(out, tty, text)
                print(f"timed out {timeout:.0f} s after publishing", file=out)
                return False
        time.sleep(1.0)


def _finish(out: TextIO, tty: bool, text: str) -> None:
    print("" if tty else text, file=out, flush=True)


def _print_kept(demo: DemoRun) -> None:
    stack = demo.stack
    if stack is None:
        return
    print("\nkept running (stop with `plowline demo` again, or by hand):")
    for name, service in demo.services.items():
        print(
            f"  {name:<10} pid {service.process.pid:<7} port {service.spec.port}  log {service.log}"
        )
    print(f"  stack: plowline dev down --data-dir {stack.data_dir}")
    print(stack.endpoints.exports())


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


COMMAND = Command(
    ("demo",),
    "run the whole pipeline locally on generated events and check every count",
    _run,
    _configure,
    description=__doc__.split("\n\n")[1] if __doc__ else None,
)
