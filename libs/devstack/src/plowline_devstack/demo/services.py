"""The four plowline services run as separate processes against a local stack, as the demo runs them.

:func:`service_commands` says how each is started (its console script and flags, a free
port for ``/healthz``, ``/readyz`` and ``/metrics``); :func:`launch` starts one with its
output in a log file; :func:`wait_ready` polls ``/readyz``; :func:`launch_ready` starts one
again each time it gives up during its start, as Kubernetes would, until it is ready. :class:`ServiceProcess` reads
a service's Prometheus counters and stops it (SIGTERM, then SIGKILL after a grace).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from plowline_cloud.chassis import EXIT_UNAVAILABLE
from plowline_core.errors import PlowlineError
from prometheus_client.parser import text_string_to_metric_families

from plowline_devstack.stack.lifecycle import LocalStack
from plowline_devstack.stack.servers import free_ports, log_tail
from plowline_devstack.stack.spark_cluster import python_driver

LOADER, MUTATOR, REPEATER, DEADLETTER = "loader", "mutator", "repeater", "deadletter"
SERVICE_NAMES = (MUTATOR, DEADLETTER, REPEATER, LOADER)
"""Start order: the consumers of the loader's outputs first, the loader last."""

DEAD_END_PREFIX = "dead-end"
BAD_ROWS_PREFIX = "bad-rows"
DEFAULT_BACKOFF_S = 300.0
"""The repeater's backoff: long enough for any column the mutator must add first."""
_HTTP_TIMEOUT_S = 2.0
RELAUNCH_PAUSE_S = 2.0
"""The pause before a service that gave up during its start is started again."""
_FIRST_POLL_S, _POLL_S = 0.01, 0.2
"""``wait_ready`` polls again 10 ms after its first look, then twice as long each time, up to 0.2 s."""
_PR_SET_PDEATHSIG = 1


class ServiceError(PlowlineError):
    """A service exited or did not become ready; the message carries its log tail."""


@dataclass(frozen=True, slots=True)
class ServiceSpec:
    """How to run one service: its arguments (after the console script) and health port."""

    name: str
    script: str
    args: tuple[str, ...]
    port: int
    submit_app: Path | None = None  # run by spark-submit: the Python file; SIGTERM goes to it


@dataclass(frozen=True, slots=True)
class DemoPaths:
    """The files and names the services are started with."""

    config: Path
    resolver: Path
    work_dir: Path
    dead_end_bucket: str
    bad_rows_bucket: str
    failed_inserts_sub: str = "failed-inserts-repeater"
    bad_rows_sub: str = "bad-rows-deadletter"


@dataclass(slots=True)
class ServiceProcess:
    """A running service: its process, health port and log."""

    spec: ServiceSpec
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def name(self) -> str:
        """The service's short name (``loader``, ``mutator``…)."""
        return self.spec.name

    def alive(self) -> bool:
        """True while the process runs."""
        return self.process.poll() is None

    def ready(self) -> bool:
        """True when ``/readyz`` answers 200."""
        return _status(f"http://127.0.0.1:{self.spec.port}/readyz") == 200

    def metrics(self, labels: Mapping[str, str] | None = None) -> dict[str, float]:
        """Return each sample name's total over its labels (those matching ``labels`` if given).

        Empty if ``/metrics`` does not answer.
        """
        try:
            with urllib.request.urlopen(
                f"http://127.0.0.1:{self.spec.port}/metrics", timeout=_HTTP_TIMEOUT_S
            ) as reply:
                text = reply.read().decode()
        except (OSError, urllib.error.URLError):
            return {}
        wanted = dict(labels or {}).items()
        totals: dict[str, float] = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if wanted <= sample.labels.items():
                    totals[sample.name] = totals.get(sample.name, 0.0) + float(sample.value)
        return totals

    def counter(self, suffix: str, labels: Mapping[str, str] | None = None) -> float | None:
        """Return the metric whose name ends with ``suffix`` (None if the service does not say)."""
        found = [value for name, value in self.metrics(labels).items() if name.endswith(suffix)]
        return sum(found) if found else None

    def stop(self, grace: float = 30.0) -> int:
        """Send SIGTERM, wait ``grace`` seconds, then SIGKILL; return the exit code.

        Notes:
            Under spark-submit the SIGTERM goes to the Python driver (the loader), which
            stops gracefully and ends spark-submit; the JVM would die at once (143).
        """
        if self.alive():
            driver = None
            if self.spec.submit_app is not None:
                driver = python_driver(self.process.pid, self.spec.submit_app)
            if driver is not None:
                os.kill(driver, signal.SIGTERM)
            else:
                self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(grace)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait(10)

    def kill(self) -> None:
        """SIGKILL the process (a crash, as the fault tests make one)."""
        if self.alive() and self.spec.submit_app is not None:
            os.killpg(self.process.pid, signal.SIGKILL)  # spark-submit's JVM with its driver
        elif self.alive():
            self.process.kill()
        self.process.wait(10)

    def tail(self) -> str:
        """Return the end of the service's log."""
        return log_tail(self.log)


def console_script(name: str) -> str:
    """Return the path of an installed console script (beside this Python first)."""
    beside = Path(sys.executable).parent / name
    if beside.is_file():
        return str(beside)
    found = shutil.which(name)
    if found is None:
        raise ServiceError(f"console script {name!r} is not installed (run `uv sync`)")
    return found


def service_commands(
    paths: DemoPaths, backoff: float = DEFAULT_BACKOFF_S
) -> dict[str, ServiceSpec]:
    """Return how to start each of the four services against the demo's configs."""
    config, resolver = str(paths.config), str(paths.resolver)
    ports = dict(zip(SERVICE_NAMES, free_ports(len(SERVICE_NAMES), "127.0.0.1"), strict=True))
    checkpoint = str(paths.work_dir / "loader-checkpoint")
    dead_end = f"gs://{paths.dead_end_bucket}/{DEAD_END_PREFIX}"
    bad_rows = f"gs://{paths.bad_rows_bucket}/{BAD_ROWS_PREFIX}"
    args = {
        LOADER: ("run", "--config", config, "--resolver", resolver, "--checkpoint", checkpoint),
        MUTATOR: ("serve", "--config", config, "--resolver", resolver, "--insecure-no-auth"),
        REPEATER: (
            "run", "--config", config, "--resolver", resolver,
            "--failedInsertsSub", paths.failed_inserts_sub, "--deadEndBucket", dead_end,
            "--backoffPeriod", _seconds(backoff), "--window", "2",
        ),
        DEADLETTER: (
            "run", "--config", config, "--badRowsSub", paths.bad_rows_sub,
            "--bucket", bad_rows, "--window", "2",
        ),
    }  # fmt: skip
    return {
        name: ServiceSpec(
            name, f"plowline-{name}", (*args[name], "--port", str(ports[name])), ports[name]
        )
        for name in SERVICE_NAMES
    }


def with_backoff(spec: ServiceSpec, backoff: float) -> ServiceSpec:
    """Return the repeater's ``spec`` with its ``--backoffPeriod`` set to ``backoff`` seconds."""
    args = list(spec.args)
    args[args.index("--backoffPeriod") + 1] = _seconds(backoff)
    return ServiceSpec(spec.name, spec.script, tuple(args), spec.port)


def _seconds(value: float) -> str:
    return f"{value:g}"


def service_env(stack: LocalStack, extra: Mapping[str, str] = {}) -> dict[str, str]:
    """Return the environment of a service: ours, the stack's endpoints, readable logs."""
    return {
        **os.environ,
        **stack.env(),
        # bqemulator does not fill load_tstamp "AUTO": the loader stamps it itself.
        "PLOWLINE_LOADER_LOAD_TSTAMP": "clock",
        "PLOWLINE_LOADER_LOG_JSON": "false",
        "PLOWLINE_MUTATOR_LOG_JSON": "false",
        "PLOWLINE_REPEATER_LOG_JSON": "false",
        "PLOWLINE_DEADLETTER_LOG_JSON": "false",
        "PYTHONUNBUFFERED": "1",
        **extra,
    }


def launch(
    spec: ServiceSpec, env: Mapping[str, str], log_dir: Path, *, outlive: bool = False
) -> ServiceProcess:
    """Start one service with its output appended to ``log_dir/<name>.log``.

    Notes:
        Unless ``outlive``, Linux sends the service SIGTERM when its parent dies, so a
        killed demo or test session leaves no service behind. Linux sends it when the
        *thread* that called ``launch`` ends (PR_SET_PDEATHSIG): launch from a thread
        that lives as long as the service should.
    """
    log_dir.mkdir(parents=True, exist_ok=True)
    log = log_dir / f"{spec.name}.log"
    with log.open("ab") as out:
        process = subprocess.Popen(
            [console_script(spec.script), *spec.args],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=dict(env),
            start_new_session=True,  # a Ctrl-C on the demo reaches the demo, which stops them
            preexec_fn=None if outlive else _die_with_parent,
        )
    return ServiceProcess(spec, process, log)


def wait_done(service: ServiceProcess, timeout: float) -> None:
    """Wait for a one-shot command (``plowline-mutator create``); raise ServiceError unless it exits 0."""
    try:
        code = service.process.wait(timeout)
    except subprocess.TimeoutExpired:
        service.kill()
        code = -9
    if code != 0:
        args = " ".join(service.spec.args)
        raise ServiceError(f"{service.spec.script} {args} exited {code}:\n{service.tail()}")


def wait_ready(services: Sequence[ServiceProcess], timeout: float) -> None:
    """Poll ``/readyz`` of each service until all answer 200; raise ServiceError otherwise."""
    deadline = time.monotonic() + timeout
    pending = list(services)
    pause = _FIRST_POLL_S
    while pending:
        for service in list(pending):
            if not service.alive():
                raise ServiceError(
                    f"{service.name} exited with {service.process.returncode} during start; "
                    f"log {service.log}:\n{service.tail()}"
                )
            if service.ready():
                pending.remove(service)
        if pending and time.monotonic() > deadline:
            names = ", ".join(s.name for s in pending)
            raise ServiceError(
                f"not ready within {timeout:.0f} s: {names}; log {pending[0].log}:\n"
                f"{pending[0].tail()}"
            )
        if pending:
            time.sleep(pause)
            pause = min(pause * 2, _POLL_S)


def launch_ready(
    spec: ServiceSpec,
    env: Mapping[str, str],
    log_dir: Path,
    timeout: float,
    *,
    outlive: bool = False,
    launched: Callable[[ServiceProcess], None] = lambda service: None,
) -> ServiceProcess:
    """Start one service (``launch``) and wait until it is ready, starting it again if it gives up.

    Notes:
        What Kubernetes does for a container that exits during its start: a service that
        exits 1 (``EXIT_UNAVAILABLE``: a dependency did not answer in time, its log says
        which) is started again after :data:`RELAUNCH_PAUSE_S`, until ``timeout`` seconds
        have passed since the first start. Any other exit (2: wrong settings) and a service
        still not ready at the deadline raise ServiceError, saying how often it was started.
        ``launched`` is called with each process as it starts (to keep the one to stop).
    """
    deadline = time.monotonic() + timeout
    starts = 0
    while True:
        service = launch(spec, env, log_dir, outlive=outlive)
        starts += 1
        launched(service)
        try:
            wait_ready([service], max(0.0, deadline - time.monotonic()))
            return service
        except ServiceError as error:
            code = service.process.poll()
            if code != EXIT_UNAVAILABLE or time.monotonic() + RELAUNCH_PAUSE_S >= deadline:
                raise ServiceError(
                    f"started {starts} time(s) within {timeout:g} s: {error}"
                ) from None
        time.sleep(RELAUNCH_PAUSE_S)


def _die_with_parent() -> None:
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _status(url: str) -> int | None:
    try:
        with urllib.request.urlopen(url, timeout=_HTTP_TIMEOUT_S) as reply:
            return int(reply.status)
    except urllib.error.HTTPError as error:
        return int(error.code)
    except (OSError, urllib.error.URLError):
        return None
