"""End-to-end fixtures: the local stack and the four services as processes, once per session.

``pipeline`` is a started :class:`plowline_devstack.demo.run.DemoRun` (the same
orchestration ``plowline demo`` uses): Pub/Sub, BigQuery and Cloud Storage stand-ins, the
events table, and ``plowline-loader run``, ``plowline-mutator serve``, ``plowline-repeater
run`` and ``plowline-deadletter run`` as subprocesses with logs under the session's temp
directory. Before any event, the operator's hand-made legacy_order column (INTEGER where
the schema says string, ``demo/conflict.py``) is added, so legacy orders never fit.
``published`` collects every line a test sends, so each test accounts for all of them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime

import pytest
from plowline_devstack.demo.generate import GeneratedLine, generate
from plowline_devstack.demo.run import DemoRun
from plowline_devstack.demo.services import ServiceError
from plowline_devstack.stack.lifecycle import StackStartError
from support.timing import wait_for

# A killed loader's leased messages come back after the ack deadline: keep it short.
_LOADER_ENV = {"PLOWLINE_LOADER_ACK_DEADLINE": "10", "PLOWLINE_LOADER_LEASE_INTERVAL": "3"}


@pytest.fixture(scope="session")
def pipeline(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoRun]:
    """The stack and the four services, started once, stopped with SIGTERM at the end."""
    run = DemoRun(tmp_path_factory.mktemp("e2e"), env=_LOADER_ENV)
    try:
        run.start(timeout=240.0)
        run.add_conflicting_column()
    except (StackStartError, ServiceError) as error:
        run.stop()
        pytest.fail(f"the pipeline did not start:\n{error}", pytrace=False)
    yield run
    run.stop()


@pytest.fixture(scope="session")
def published() -> list[GeneratedLine]:
    """Every line published during the session, in order."""
    return []


def _lines(count: int, seed: int, never_fitting: int = 0) -> list[GeneratedLine]:
    start = datetime.now(UTC)
    return list(generate(count, start=start, seed=seed, rate=500.0, never_fitting=never_fitting))


def _wait_accounted(pipeline: DemoRun, total: int, timeout: float = 240.0) -> int:
    found = 0

    def all_accounted() -> bool:
        nonlocal found
        found = pipeline.progress(total).accounted
        return found >= total

    wait_for(all_accounted, timeout, every_s=1.0)
    return found


@pytest.fixture(scope="session")
def make_lines() -> Callable[..., list[GeneratedLine]]:
    """``make_lines(count, seed, never_fitting=0)``: lines (5% malformed) stamped from now."""
    return _lines


@pytest.fixture(scope="session")
def wait_accounted() -> Callable[..., int]:
    """``wait_accounted(pipeline, total)``: poll until rows + bad rows + dead-ended reach total."""
    return _wait_accounted
