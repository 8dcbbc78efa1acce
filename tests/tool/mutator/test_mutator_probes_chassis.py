"""serve's probes answer what every other command's health server answers (the chassis's answers)."""

from __future__ import annotations

import threading
import warnings
from collections.abc import Iterator

import httpx
import pytest
from plowline_cloud.liveness import ProgressWatch
from plowline_cloud.metrics import MetricsRegistry, start_health_server
from plowline_core.schema.entity import ColumnMode
from plowline_core.schema.field import Field, FieldType, Mode
from plowline_core.testing.table import InMemoryTableSchemaStore
from plowline_mutator.api import ApiContext, create_app
from plowline_mutator.metrics import MutatorMetrics
from plowline_mutator.mutation import Mutator
from starlette.exceptions import StarletteDeprecationWarning
from support.timing import ManualClock

with warnings.catch_warnings():
    # Starlette asks for the httpx2 package, which is not installed; httpx works.
    warnings.simplefilter("ignore", StarletteDeprecationWarning)
    from fastapi.testclient import TestClient

LIMIT = 60.0


class _Resolver:
    """A resolver the probes never ask."""

    def resolve(self, key: object) -> object:
        raise AssertionError("the probes resolve nothing")


@pytest.fixture
def clock() -> ManualClock:
    """A fake monotonic clock."""
    return ManualClock(1000.0)


@pytest.fixture
def watch(clock: ManualClock) -> ProgressWatch:
    """A watch holding one type, on the fake clock."""
    watch = ProgressWatch(LIMIT, clock)
    watch.took(1)
    return watch


@pytest.fixture
def both(watch: ProgressWatch) -> Iterator[tuple[TestClient, str]]:
    """The mutator's API and a chassis health server over the same watch and readiness."""
    store = InMemoryTableSchemaStore([Field("event_id", FieldType.STRING, Mode.REQUIRED)])
    mutator = Mutator(_Resolver(), store, ColumnMode.FULL, threading.Lock())  # type: ignore[arg-type]
    context = ApiContext(
        mutator, store, MutatorMetrics(), None, lambda: False, list, liveness=watch.details
    )
    server = start_health_server(
        0,
        MetricsRegistry("x"),
        lambda: False,
        host="127.0.0.1",
        details=lambda: {"registries": []},
        liveness=watch.details,
    )
    yield TestClient(create_app(context)), f"http://127.0.0.1:{server.port}"
    server.stop()


@pytest.mark.parametrize(
    "stalled_s",
    [pytest.param(0.0, id="alive"), pytest.param(LIMIT + 1, id="stalled")],
)
@pytest.mark.parametrize(
    "path", [pytest.param("/healthz", id="healthz"), pytest.param("/readyz", id="readyz")]
)
def test_serve_answers_its_probe_as_the_chassis_does(
    both: tuple[TestClient, str], clock: ManualClock, path: str, stalled_s: float
) -> None:
    """serve's /healthz and /readyz give the status and JSON of the chassis's health server."""
    api, health_url = both
    clock.now += stalled_s

    served = api.get(path)
    chassis = httpx.get(health_url + path, timeout=5.0)

    assert (chassis.status_code, chassis.json()) == (served.status_code, served.json())
