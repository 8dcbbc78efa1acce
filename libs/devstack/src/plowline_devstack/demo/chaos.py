"""Chaos: faults on, every service SIGKILLed and restarted at random, every event accounted for.

:func:`run_chaos` is the scenario ``plowline demo --chaos`` and the e2e tier share. It
starts the local stack with a fault plan (``faults/plan.py``) and the four services in one
write mode (``write_modes.py``), publishes ``events`` lines (~5% malformed, a quarter of
them years old, new entity columns appearing as they go) paced over ``window`` seconds,
and meanwhile SIGKILLs each service ``kills`` times at seeded random moments of that
window (:func:`kill_schedule`), restarting it at once. Then it waits until every event is
placed, measures the time from the last kill until then (the settle time), waits
``linger`` seconds more so late copies can show, and reads the exact accounting per event
id. ``chaos_verdict.py`` judges it.

Notes:
    Each service has a thread of its own that works through its kills in order: a kill
    that falls due while that service is still restarting happens once it is ready, so
    kills of different services may overlap, kills of one service never do. Those threads
    outlive their schedule until :meth:`Killer.release`: a service is started with
    PR_SET_PDEATHSIG, which Linux fires when the *thread* that started it ends (the
    restarted services were SIGTERMed the moment their thread's last kill was done). The same seed
    gives the same schedule and the same events (not the same interleaving: the machine
    decides that). Old events exercise the repeater's backoff, which counts from when a
    failure was first seen, never from the event's own timestamps.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from plowline_core.errors import PlowlineError

from plowline_devstack.demo.chaos_tap import FailedInsertTap
from plowline_devstack.demo.generate import GeneratedLine, generate
from plowline_devstack.demo.report import Accounting
from plowline_devstack.demo.run import EXAMPLES, DemoRun
from plowline_devstack.demo.services import SERVICE_NAMES
from plowline_devstack.demo.write_modes import WriteMode, write_config
from plowline_devstack.faults.draws import struck_faults
from plowline_devstack.faults.plan import NO_FAULTS, FaultPlan

CHAOS_ENV = {
    "PLOWLINE_LOADER_ACK_DEADLINE": "10",
    "PLOWLINE_LOADER_LEASE_INTERVAL": "3",
    "PLOWLINE_LOADER_STALL_TIMEOUT": "60",
}
"""A killed loader's leased messages come back after its ack deadline: keep it short. A
loader whose micro-batch hangs exits after the stall timeout (and is restarted, as
Kubernetes would): well inside the settle timeout."""
OLD_SHARE = 0.25
OLD_AGE = timedelta(days=3 * 365)
_LOOK_EVERY_S = 1.0
_SHOW_EVERY_S = 5.0

Say = Callable[[str], None]


@dataclass(frozen=True, slots=True, order=True)
class Kill:
    """One planned SIGKILL: ``at`` seconds after publishing began, of ``service``."""

    at: float
    service: str


@dataclass(frozen=True, slots=True)
class KillDone:
    """One SIGKILL as it happened: when (seconds after the start) and how long the restart took."""

    kill: Kill
    killed_at: float
    restart_s: float | None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class ExitSeen:
    """A service that exited by itself (not a planned kill), restarted as Kubernetes would."""

    service: str
    seen_at: float
    code: int | None
    restart_s: float | None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class ChaosPlan:
    """What one chaos run does."""

    mode: WriteMode
    events: int = 3000
    seed: int = 2024
    kills: int = 3
    window: float = 90.0
    faults: FaultPlan = NO_FAULTS
    settle_timeout: float = 300.0
    linger: float = 15.0


@dataclass(slots=True)
class ChaosReport:
    """What one chaos run measured; ``chaos_verdict.verdict`` judges it."""

    plan: ChaosPlan
    schedule: tuple[Kill, ...]
    kills: list[KillDone] = field(default_factory=list)
    exits: list[ExitSeen] = field(default_factory=list)
    """Services that exited by themselves (a stalled loader, a crash) and were restarted."""
    published: int = 0
    publish_s: float = 0.0
    settle_s: float | None = None
    wall_s: float = 0.0
    accounting: Accounting | None = None
    not_running: list[str] = field(default_factory=list)
    error: str | None = None
    copies: dict[str, tuple[int, float]] = field(default_factory=dict)
    """Per event id held more than once: copies, seconds between their load_tstamps."""
    refused: frozenset[str] = frozenset()
    """Event ids the loader refused at least once (sent to the repeater)."""
    faults_struck: dict[str, int] = field(default_factory=dict)
    """How often each fault struck, per ``<stand-in log>.<fault>`` (``struck_faults``)."""


def kill_schedule(
    seed: int, kills: int, window: float, services: Sequence[str] = SERVICE_NAMES
) -> tuple[Kill, ...]:
    """Return ``kills`` SIGKILLs per service at seeded random moments of ``window``, in order."""
    rng = random.Random(f"chaos:{seed}")
    planned = [
        Kill(round(rng.uniform(0.0, window), 1), name) for name in services for _ in range(kills)
    ]
    return tuple(sorted(planned))


def chaos_lines(count: int, seed: int, now: datetime) -> list[GeneratedLine]:
    """Return ``count`` lines (5% malformed): fresh ones and, shuffled in, years-old ones."""
    old = round(count * OLD_SHARE)
    fresh = list(generate(count - old, start=now, seed=seed, rate=500.0))
    aged = list(generate(old, start=now - OLD_AGE, seed=seed + 1, rate=500.0))
    rng = random.Random(f"interleave:{seed}")
    slots = [True] * len(aged) + [False] * len(fresh)
    rng.shuffle(slots)
    aged_lines, fresh_lines = iter(aged), iter(fresh)
    return [next(aged_lines) if is_old else next(fresh_lines) for is_old in slots]


class Killer:
    """Work through a kill schedule, one thread per service, recording each kill."""

    def __init__(self, run: DemoRun, schedule: Sequence[Kill], say: Say) -> None:
        self._run, self._say = run, say
        self._began = 0.0
        self.done: list[KillDone] = []
        self._lock = threading.Lock()
        self._pending = len(schedule)
        self._released = threading.Event()
        self.exits: list[ExitSeen] = []
        names = sorted({*SERVICE_NAMES, *(kill.service for kill in schedule)})
        self._restarting = {name: threading.Lock() for name in names}
        names = sorted({kill.service for kill in schedule})
        self._threads = [
            threading.Thread(
                target=self._work,
                args=([k for k in schedule if k.service == name],),
                name=f"chaos-{name}",
                daemon=True,
            )
            for name in names
        ]

    def start(self, began: float) -> None:
        """Start every service's thread; kill times count from ``began`` (monotonic)."""
        self._began = began
        for thread in self._threads:
            thread.start()

    def busy(self) -> bool:
        """True while a kill is still to come or a restart is under way."""
        with self._lock:
            return self._pending > 0

    def revive_exited(self) -> None:
        """Restart, in a thread of its own, each service that exited by itself; record it.

        Notes:
            What Kubernetes does for a container that exits. A service being killed and
            restarted by its kill thread is left alone (its lock is held meanwhile).
        """
        for name, lock in self._restarting.items():
            if not lock.acquire(blocking=False):
                continue
            service = self._run.services.get(name)
            if service is None or service.alive():
                lock.release()
                continue
            thread = threading.Thread(
                target=self._revive, args=(name, lock), name=f"revive-{name}", daemon=True
            )
            self._threads.append(thread)
            thread.start()

    def _revive(self, name: str, lock: threading.Lock) -> None:
        seen = time.monotonic()
        code = self._run.services[name].process.returncode
        error = None
        try:
            self._run.restart(name, kill=True, timeout=240.0)
        except PlowlineError as exc:
            error = str(exc)
        finally:
            lock.release()
        restart_s = None if error else time.monotonic() - seen
        with self._lock:
            self.exits.append(ExitSeen(name, seen - self._began, code, restart_s, error))
        self._say(
            f"{name} exited by itself (code {code}): "
            + (f"did not come back: {error}" if error else f"restarted, ready in {restart_s:.1f} s")
        )
        self._released.wait()  # the service this thread started dies with it

    def release(self) -> None:
        """Let the threads end (only once the services they restarted are stopped)."""
        self._released.set()
        for thread in self._threads:
            if thread.ident is not None:  # started
                thread.join(10.0)

    def _work(self, kills: Sequence[Kill]) -> None:
        for kill in kills:
            time.sleep(max(0.0, self._began + kill.at - time.monotonic()))
            killed_at = time.monotonic()
            error = None
            with self._restarting[kill.service]:
                try:
                    self._run.restart(kill.service, kill=True, timeout=240.0)
                except PlowlineError as exc:  # a service that does not come back fails the run
                    error = str(exc)
            ready = time.monotonic()
            done = KillDone(kill, killed_at - self._began, ready - killed_at, error)
            with self._lock:
                self.done.append(done)
                self._pending -= 1 if not error else len(kills) - kills.index(kill)
            self._say(
                f"SIGKILL {kill.service} (planned {kill.at:.1f} s, done {done.killed_at:.1f} s): "
                + (
                    f"did not come back: {error}"
                    if error
                    else f"ready again in {done.restart_s:.1f} s"
                )
            )
            if error:
                break
        self._released.wait()  # the services this thread started die with it


def run_chaos(plan: ChaosPlan, work_dir: Path, say: Say) -> ChaosReport:
    """Run the chaos scenario of ``plan`` in ``work_dir`` and return what it measured."""
    mode = plan.mode
    config = write_config(EXAMPLES / "config.json", mode, work_dir / "configs")
    run = DemoRun(
        work_dir / "run",
        env={**CHAOS_ENV, **mode.loader_env},
        faults=plan.faults,
        config=config,
        buckets=mode.buckets,
    )
    report = ChaosReport(plan, kill_schedule(plan.seed, plan.kills, plan.window))
    killer = Killer(run, report.schedule, say)
    began = time.monotonic()
    try:
        say(f"write mode {mode.name}: {mode.summary}")
        run.start(timeout=240.0, say=say)
        _drive(run, plan, report, killer, say)
    except PlowlineError as exc:
        report.error = str(exc)
    finally:
        if run.stack is not None:
            report.faults_struck = dict(struck_faults(run.stack.data_dir / "logs"))
        say("stopping everything")
        run.stop()
        killer.release()
    report.wall_s = time.monotonic() - began
    return report


def _drive(run: DemoRun, plan: ChaosPlan, report: ChaosReport, killer: Killer, say: Say) -> None:
    tap = FailedInsertTap(run.stack) if run.stack is not None else None
    lines = chaos_lines(plan.events, plan.seed, datetime.now(UTC))
    malformed = sum(1 for g in lines if not g.good)
    say(
        f"publishing {len(lines)} events ({malformed} malformed, "
        f"{round(len(lines) * OLD_SHARE)} of them {OLD_AGE.days // 365} years old) over "
        f"{plan.window:g} s; kill schedule (seconds from the first publish):"
    )
    for kill in report.schedule:
        say(f"    {kill.at:6.1f}  SIGKILL {kill.service}")
    sent = [0]
    began = time.monotonic()
    rate = len(lines) / plan.window if plan.window > 0 else 0.0

    def publish() -> None:
        sent[0] = run.publish(lines, rate, lambda n: sent.__setitem__(0, n))
        report.publish_s = time.monotonic() - began

    publisher = threading.Thread(target=publish, name="chaos-publish", daemon=True)
    publisher.start()
    killer.start(began)
    last_shown = 0.0
    while publisher.is_alive() or killer.busy():
        killer.revive_exited()
        last_shown = _show(run, sent[0], len(lines), killer, last_shown, say)
        time.sleep(_LOOK_EVERY_S)
    report.kills = sorted(killer.done, key=lambda done: done.killed_at)
    report.published = sent[0]
    if any(done.error for done in report.kills):
        raise PlowlineError("a service did not come back after its SIGKILL (see above)")
    last_kill = began + max((done.killed_at for done in report.kills), default=0.0)
    placed_at = _wait_placed(run, lines, plan.settle_timeout, killer, say)
    if placed_at is not None:
        report.settle_s = placed_at - last_kill
        say(f"every event placed {report.settle_s:.1f} s after the last SIGKILL")
        say(f"waiting {plan.linger:g} s more for late copies (redeliveries, resends)")
        time.sleep(plan.linger)
    report.exits = sorted(killer.exits, key=lambda seen: seen.seen_at)
    report.accounting = run.account(lines)
    if report.accounting.duplicates:
        report.copies = run.reader.duplicate_copies()
    if tap is not None:
        report.refused = frozenset(tap.event_ids() & report.accounting.good)
    report.not_running = [name for name, service in run.services.items() if not service.alive()]


def _wait_placed(
    run: DemoRun,
    lines: Sequence[GeneratedLine],
    timeout: float,
    killer: Killer,
    say: Say,
) -> float | None:
    """Poll until every event is placed; return when (monotonic), or None after ``timeout``."""
    deadline = time.monotonic() + timeout
    last_shown = 0.0
    while time.monotonic() < deadline:
        killer.revive_exited()
        if run.progress(len(lines)).accounted >= len(lines):
            accounting = run.account(lines)
            if not accounting.missing and not accounting.misplaced:
                return time.monotonic()
        last_shown = _show(run, len(lines), len(lines), killer, last_shown, say)
        time.sleep(_LOOK_EVERY_S)
    say(f"not every event was placed within {timeout:g} s of the end of publishing and kills")
    return None


def _show(run: DemoRun, sent: int, total: int, killer: Killer, last: float, say: Say) -> float:
    now = time.monotonic()
    if now - last < _SHOW_EVERY_S:
        return last
    try:
        progress = run.progress(sent)
    except Exception as exc:  # a look is an illustration: a failed one is shown, not fatal
        say(f"(progress unavailable: {type(exc).__name__})")
        return now
    failed = "?" if progress.failed_inserts is None else f"{progress.failed_inserts:.0f}"
    say(
        f"published {sent}/{total}  rows {progress.distinct_rows}  bad rows {progress.bad_rows}"
        f"  failed inserts {failed}  columns added {progress.columns_added}"
        f"  dead-ended {progress.dead_ended}  kills done {len(killer.done)}"
    )
    return now
