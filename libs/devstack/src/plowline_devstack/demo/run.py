"""A demo run: the local stack and the four services, started, fed, watched and stopped.

:class:`DemoRun` is the orchestration ``plowline demo`` and the e2e tier share: it starts
the stack, creates the events table, launches the services as processes
(``demo/services.py``), publishes generated lines, reads progress and the final figures
(``demo/report.py``), can add the operator's hand-made conflicting column
(``demo/conflict.py``) and restart the repeater with another backoff. With ``workers``
it starts a Spark standalone cluster beside the stack and submits the loader to it
(``demo/cluster.py``). With ``faults`` the stand-ins fail as Google's services can
(``faults/plan.py``); ``config`` picks another Snowplow config (another ``load.mode``) and
``buckets`` adds buckets (the FILE_LOADS staging bucket): ``chaos.py`` uses all three.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from plowline_cloud.clients import bigquery_client, publisher_client
from plowline_core.event.fields import ATOMIC_COLUMNS
from plowline_core.schema.field import Field

from plowline_devstack.demo.cluster import on_cluster, placement, write_driver
from plowline_devstack.demo.conflict import add_by_hand, describe, hand_made_column
from plowline_devstack.demo.generate import DEAD_END, GeneratedLine, publish
from plowline_devstack.demo.progress import Progress
from plowline_devstack.demo.report import Accounting, Summary, SystemsReader, sample_queries
from plowline_devstack.demo.services import (
    BAD_ROWS_PREFIX,
    DEAD_END_PREFIX,
    DEFAULT_BACKOFF_S,
    LOADER,
    MUTATOR,
    REPEATER,
    SERVICE_NAMES,
    DemoPaths,
    ServiceProcess,
    ServiceSpec,
    launch,
    launch_ready,
    service_commands,
    service_env,
    wait_done,
    wait_ready,
    with_backoff,
)
from plowline_devstack.faults.plan import NO_FAULTS, FaultPlan
from plowline_devstack.stack import lifecycle as stacks
from plowline_devstack.stack.config import StackConfig
from plowline_devstack.stack.spark_cluster import (
    ClusterSpec,
    SparkCluster,
    read_cluster,
    start_cluster,
)

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
_SERVICES_FILE = "services.json"
_STOP_ORDER = (LOADER, REPEATER, "deadletter", MUTATOR)
_REINSERTED = "repeater_reinserted_total"


class DemoRun:
    """A stack, the four services and a reader: started, fed, watched and stopped."""

    def __init__(
        self,
        work_dir: Path,
        *,
        outlive: bool = False,
        env: Mapping[str, str] | None = None,
        backoff: float = DEFAULT_BACKOFF_S,
        workers: int = 0,
        faults: FaultPlan = NO_FAULTS,
        config: Path | None = None,
        buckets: Sequence[str] = (),
    ) -> None:
        self.work_dir = work_dir.resolve()
        self.faults = faults
        self.config = config or EXAMPLES / "config.json"
        self.extra_buckets = tuple(buckets)
        self.workers = workers
        self.cluster: SparkCluster | None = None
        self.outlive = outlive
        self.extra_env = dict(env or {})
        self.backoff = backoff
        self.stack: stacks.LocalStack | None = None
        self.services: dict[str, ServiceProcess] = {}
        self.specs: dict[str, ServiceSpec] = {}
        self._reader: SystemsReader | None = None
        self.initial_columns = [column.name for column in ATOMIC_COLUMNS]
        self.conflict: Field | None = None
        self._reinserted_before = 0.0  # by repeaters restarted since (their counters are gone)

    @property
    def reader(self) -> SystemsReader:
        """The reader of the running stack."""
        if self._reader is None:
            raise RuntimeError("the demo stack is not started")
        return self._reader

    @property
    def paths(self) -> DemoPaths:
        """The configs, work directory and buckets the services use."""
        buckets = self._stack().config.buckets[:2]  # dead end, bad rows; extra ones follow
        return DemoPaths(self.config, EXAMPLES / "resolver.json", self.work_dir, *buckets)

    @property
    def log_dir(self) -> Path:
        """Where each service's log is written."""
        return self.work_dir / "logs"

    def start(self, timeout: float = 180.0, say: Callable[[str], None] = lambda text: None) -> None:
        """Start the stack, create the table, start the services and wait until all are ready."""
        say("starting the local stack (Pub/Sub, BigQuery, Cloud Storage stand-ins)")
        defaults = StackConfig()
        provisioned = StackConfig(buckets=(*defaults.buckets, *self.extra_buckets))
        self.stack = stacks.start_stack(
            self.work_dir / "stack", provisioned, persistent=False, faults=self.faults
        )
        if self.faults.faults:
            say(f"faults on: {', '.join(self.faults.names())}")
        self._reader = SystemsReader(self.stack)
        self.initial_columns = self.reader.columns()
        env = self._service_env()
        self.specs = service_commands(self.paths, self.backoff)
        if self.workers > 0:
            say(
                f"starting a Spark standalone cluster: a master and {self.workers} workers "
                "(1 core each, each its own JVM); the loader is submitted to it"
            )
            self.cluster = start_cluster(
                self.work_dir / "spark", ClusterSpec(workers=self.workers), daemon=self.outlive
            )
            driver = write_driver(self.work_dir / "spark")
            self.specs[LOADER] = on_cluster(self.specs[LOADER], self.cluster, driver)
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

    def add_conflicting_column(self) -> Field:
        """Add the operator's hand-made legacy_order column (``demo/conflict.py``); return it.

        Notes:
            Call it before any legacy_order event is published: otherwise the mutator
            adds the column the schema asks for first.
        """
        stack = self._stack()
        column = hand_made_column(EXAMPLES / "iglu")
        client = bigquery_client(stack.endpoints.project, stack.endpoints.bigquery_url)
        try:
            add_by_hand(client, stack.table_ref, column)
        finally:
            client.close()  # type: ignore[no-untyped-call]  # the client's close is untyped
        self.conflict = column
        self.initial_columns.append(column.name)  # the operator's column, not the mutator's
        return column

    def restart(self, name: str, *, kill: bool = True, timeout: float = 180.0) -> ServiceProcess:
        """Kill (SIGKILL) or stop a service, start it again and wait until it is ready.

        Notes:
            A new process that gives up during its start (exit 1) is started again until
            ``timeout`` (``services.launch_ready``), as Kubernetes would.
            The new process gets SIGTERM when the calling thread ends (``launch``): call it
            from a thread that lives until :meth:`stop`.
        """
        old = self.services[name]
        if name == REPEATER:  # its counters go with it
            self._reinserted_before += old.counter(_REINSERTED) or 0.0
        if kill:
            old.kill()
        else:
            old.stop()
        return launch_ready(
            self.specs[name],
            self._service_env(),
            self.log_dir,
            timeout,
            outlive=self.outlive,
            launched=lambda new: self.services.__setitem__(name, new),
        )

    def _service_env(self) -> dict[str, str]:
        """Return the services' environment; Spark's scratch (``blockmgr-*``) in the run's directory.

        Notes:
            A SIGKILLed loader leaves its block manager's directory behind; under the run's
            directory it goes with the run instead of piling up in /tmp.
        """
        scratch = {"SPARK_LOCAL_DIRS": str(self.work_dir / "spark-local")}
        return service_env(self._stack(), {**scratch, **self.extra_env})

    def use_backoff(self, seconds: float, timeout: float = 180.0) -> ServiceProcess:
        """Restart the repeater gracefully with ``--backoffPeriod seconds``.

        Notes:
            SIGTERM makes the repeater give back the rows it holds, so the new one takes
            them on: nothing is lost.
        """
        self.backoff = seconds
        self.specs[REPEATER] = with_backoff(self.specs[REPEATER], seconds)
        return self.restart(REPEATER, kill=False, timeout=timeout)

    def publish(
        self,
        lines: Sequence[GeneratedLine],
        rate: float,
        on_progress: Callable[[int], None] = lambda sent: None,
    ) -> int:
        """Publish ``lines`` to the enriched topic; return once the topic holds them all."""
        stack = self._stack()
        publisher = publisher_client(stack.endpoints.pubsub_target)
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
            never_fit=(g.event_id for g in lines if g.fate == DEAD_END),
        )

    def summary(self, lines: Sequence[GeneratedLine]) -> Summary:
        """Read the final figures from BigQuery, Cloud Storage and the services' metrics."""
        paths, reader = self.paths, self.reader
        rows, distinct = reader.row_counts()
        bad = reader.bad_rows(paths.bad_rows_bucket, BAD_ROWS_PREFIX)
        dead = reader.bad_rows(paths.dead_end_bucket, DEAD_END_PREFIX)
        columns = reader.columns()
        added = [c for c in columns if c not in set(self.initial_columns)]
        mutator = self.services[MUTATOR]
        summary = Summary(
            published=len(lines),
            rows=rows,
            distinct_rows=distinct,
            bad_rows=bad.rows,
            bad_row_objects=bad.objects,
            dead_ended=dead.rows,
            columns_added=added,
            reinserted=self._reinserted(),
            mutator_columns=mutator.counter("mutator_columns_added_total"),
            accounting=self.account(lines),
            dead_end_rows=reader.dead_end_rows(paths.dead_end_bucket, DEAD_END_PREFIX),
            conflict=describe(self.conflict) if self.conflict else None,
        )
        for title, sql in sample_queries(self._stack().table_ref, added):
            summary.samples.append((title, *reader.sample(sql)))
        master = self.cluster.master_url if self.cluster else None
        summary.placement = placement(self.services[LOADER].spec.port, master)
        return summary

    def _reinserted(self) -> float | None:
        now = self.services[REPEATER].counter(_REINSERTED)
        if now is None:
            return None
        return self._reinserted_before + now

    def diagnose(self, accounting: Accounting) -> list[str]:
        """Say what is missing and what each service reports about it."""
        missing, fitting = accounting.missing, accounting.dead_ended_fitting
        out = [
            f"missing {len(missing)} events ({len(missing & accounting.good)} good, "
            f"{len(missing & accounting.bad)} malformed); e.g. {sorted(missing)[:3]}",
            f"dead-ended although they could fit: {len(fitting)}; e.g. {sorted(fitting)[:3]}",
            f"duplicates: {accounting.duplicates} rows, {accounting.duplicate_bad_rows} bad rows, "
            f"{accounting.duplicate_dead_ends} dead-end rows",
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
        if self.cluster is not None:
            self.cluster.stop()
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
    cluster = read_cluster(work_dir / "spark")
    if cluster is not None:
        cluster.stop()
    if work_dir.is_dir():
        shutil.rmtree(work_dir)


def _stop_if_ours(pid: int) -> None:
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return
    if b"plowline-" in command:  # the pid was not reused by someone else's process
        os.kill(pid, signal.SIGTERM)
