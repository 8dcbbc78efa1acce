"""``plowline demo``: the whole pipeline on this machine, every event accounted for.

Starts the local stack in a data directory (default ``.plowline/demo``, emptied first),
creates the events table with ``plowline-mutator create``, runs the loader, mutator,
repeater and dead-letter writer as separate processes (logs in ``<data dir>/logs``),
publishes a generated stream (``plowline dev generate``, ~5% malformed), shows progress,
waits until every event is a row or a bad row, then plays the never-fitting case: valid
legacy orders whose column an operator made by hand with the wrong type, which end in the
dead-end bucket. Prints a summary read from BigQuery, Cloud Storage and the services'
``/metrics`` with a PASS/FAIL line, and stops everything (unless ``--keep``).

With ``--monitor`` a real Prometheus (``prometheus`` on PATH) scrapes the four services
during the run; at the end every panel query of the Grafana dashboard and every alert
condition of ``deploy/monitoring/alerts.yaml`` is evaluated and printed
(``demo/monitor.py``). The never-fitting case makes PlowlineDeadEnds hold, as it should;
``--never-fitting 0`` is a healthy run.

With ``--chaos`` it runs the chaos scenario instead (``chaos_command.py``): faults on in the
stack, every service SIGKILLed and restarted at random while events flow, in one write mode
or all of them.

Exit codes: 0 PASS, 1 FAIL (counts do not add up, or a timeout), 2 could not start.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType

from plowline_core.errors import PlowlineError

from plowline_devstack.cli import Command
from plowline_devstack.demo import chaos_command
from plowline_devstack.demo.conflict import describe
from plowline_devstack.demo.generate import GeneratedLine, generate
from plowline_devstack.demo.monitor import Prometheus, evaluate, find_prometheus, start_prometheus
from plowline_devstack.demo.progress import watch
from plowline_devstack.demo.run import DemoRun, clear_previous
from plowline_devstack.demo.services import DEFAULT_BACKOFF_S

DEFAULT_DATA_DIR = Path(".plowline/demo")
NEVER_FITTING_BACKOFF_S = 5.0
"""The repeater's backoff for the never-fitting case: every column exists by then."""


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--events", type=int, default=2000, help="events to publish (default 2000)")
    parser.add_argument(
        "--never-fitting",
        type=int,
        default=20,
        help="legacy orders published last, bound for the dead-end bucket (default %(default)s;"
        " 0 skips the never-fitting case)",
    )
    parser.add_argument("--keep", action="store_true", help="leave the stack and services running")
    parser.add_argument(
        "--workers",
        type=int,
        default=0,
        metavar="N",
        help="run the loader on a Spark standalone cluster of N one-core workers started beside "
        "the stack (spark-submit --master spark://...); default 0: the loader runs Spark in "
        "local mode in its own process",
    )
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
    parser.add_argument(
        "--monitor",
        action="store_true",
        help="run Prometheus (`prometheus` on PATH; Debian: apt-get install prometheus) over the "
        "services, scraping every second with compose's job names; at the end print, per "
        "dashboard panel, whether its queries returned data and, per alert, whether its "
        "condition holds",
    )
    chaos_command.configure(parser)


def _run(args: argparse.Namespace) -> int:
    if args.chaos:
        signal.signal(signal.SIGTERM, _interrupt)
        try:
            return chaos_command.run(args)
        except KeyboardInterrupt:
            print("\nplowline demo --chaos: interrupted", file=sys.stderr)
            return 130
    began = time.monotonic()
    err = sys.stderr

    def say(text: str) -> None:
        print(f"[{time.monotonic() - began:5.1f} s] {text}", file=err, flush=True)

    signal.signal(signal.SIGTERM, _interrupt)
    try:
        if args.monitor:
            find_prometheus()
    except PlowlineError as error:
        print(f"plowline demo: {error}", file=err)
        return 2
    clear_previous(args.data_dir)
    demo = DemoRun(args.data_dir, outlive=args.keep, workers=args.workers)
    prometheus: Prometheus | None = None
    code = 2
    try:
        demo.start(say=say)
        if args.monitor:
            ports = {name: service.spec.port for name, service in demo.services.items()}
            prometheus = start_prometheus(args.data_dir.resolve() / "prometheus", ports)
            say(f"Prometheus scrapes the services every second: {prometheus.url}")
        if args.never_fitting > 0:
            column = demo.add_conflicting_column()
            say(f"an operator adds a column by hand, before any legacy order: {describe(column)}")
        code = _feed_and_check(demo, args, say, began)
        if prometheus is not None:
            prometheus.wait_scrapes()
            print()
            for line in evaluate(prometheus).lines():
                print(line)
    except PlowlineError as error:
        print(f"plowline demo: {error}", file=err)
    except KeyboardInterrupt:
        print("\nplowline demo: interrupted", file=err)
        code = 130
    finally:
        if prometheus is not None:
            prometheus.stop()
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
    done = _publish_and_watch(demo, lines, 0, args, began)
    if done and args.never_fitting > 0:
        say(
            f"the never-fitting case: restarting the repeater with --backoffPeriod "
            f"{NEVER_FITTING_BACKOFF_S:g} (was {DEFAULT_BACKOFF_S:g}: every column exists now), "
            f"then publishing {args.never_fitting} legacy orders the table will keep refusing"
        )
        demo.use_backoff(NEVER_FITTING_BACKOFF_S)
        legacy = list(
            generate(
                args.never_fitting,
                start=datetime.now(UTC),
                seed=args.seed + 1,
                bad_fraction=0.0,
                rate=args.rate or 1000.0,
                never_fitting=args.never_fitting,
            )
        )
        done = _publish_and_watch(demo, legacy, len(lines), args, began)
        lines += legacy
    summary = demo.summary(lines)
    print()
    for line in summary.lines():
        print(line)
    if not (done and summary.accounting.exact):
        for line in demo.diagnose(summary.accounting):
            print(line)
    return 0 if done and summary.accounting.exact else 1


def _publish_and_watch(
    demo: DemoRun, lines: list[GeneratedLine], before: int, args: argparse.Namespace, began: float
) -> bool:
    """Publish ``lines`` on a thread; watch until ``before`` + them are all accounted for."""
    sent = [before]

    def send() -> None:
        demo.publish(lines, args.rate, lambda n: sent.__setitem__(0, before + n))

    publisher = threading.Thread(target=send, daemon=True)
    publisher.start()
    return watch(demo.progress, before + len(lines), publisher, sent, args.timeout, began)


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
    if demo.cluster is not None:
        print(f"  spark cluster {demo.cluster.master_url}: logs in {demo.cluster.directory}")
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
