"""The probes answer while API calls hold every thread of the pool."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from datetime import UTC, datetime

import anyio
import anyio.to_thread
import httpx
import pytest
from plowline_core.iglu.config import HttpConnection, RepositoryRef
from plowline_core.iglu.resolver import Resolver
from plowline_core.schema.entity import ColumnMode
from plowline_core.schema.field import Field, FieldType, Mode
from plowline_core.testing.clock import FixedClock
from plowline_core.testing.registry import InMemoryRegistry
from plowline_core.testing.table import InMemoryTableSchemaStore
from plowline_mutator.api import ApiContext, create_app
from plowline_mutator.metrics import MutatorMetrics
from plowline_mutator.mutation import Mutator
from pydantic import SecretStr

TOKEN = "s3cret-token"


class SlowTable(InMemoryTableSchemaStore):
    """A table whose schema read waits until released (BigQuery taking its time)."""

    def __init__(self) -> None:
        super().__init__([Field("event_id", FieldType.STRING, Mode.REQUIRED)])
        self.entered = threading.Event()
        self.release = threading.Event()

    def refresh(self) -> Sequence[Field]:
        """Wait for ``release`` (at most 10 s), then answer."""
        self.entered.set()
        self.release.wait(10)
        return super().refresh()


async def _probe_while_starved(path: str) -> int:
    table = SlowTable()
    ref = RepositoryRef("mem", 0, (), HttpConnection("http://127.0.0.1:1"))
    resolver = Resolver(
        [(ref, InMemoryRegistry("mem"))], FixedClock(datetime(2026, 1, 1, tzinfo=UTC))
    )
    mutator = Mutator(resolver, table, ColumnMode.FULL, threading.Lock())
    app = create_app(ApiContext(mutator, table, MutatorMetrics(), SecretStr(TOKEN)))
    anyio.to_thread.current_default_thread_limiter().total_tokens = 1  # the pool, all held
    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://mutator") as client:
            auth = {"Authorization": f"Bearer {TOKEN}"}
            held = asyncio.create_task(client.get("/v1/columns", headers=auth))
            assert await asyncio.to_thread(table.entered.wait, 10)
            with anyio.fail_after(3):
                probe = await client.get(path)
            table.release.set()
            await held
            return probe.status_code
    finally:
        table.release.set()


@pytest.mark.parametrize("path", ["/healthz", "/readyz", "/metrics"])
def test_a_probe_answers_while_api_calls_hold_every_thread(path: str) -> None:
    """/healthz, /readyz and /metrics answer on the event loop, not in the held pool."""
    expected = 200
    assert expected == asyncio.run(_probe_while_starved(path))
