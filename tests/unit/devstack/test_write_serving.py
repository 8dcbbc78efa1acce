"""The BigQuery stand-in's Write API serving: no thread waits on a client, nothing runs on the loop."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from plowline_devstack.bigquery.write_serving import bridged_append_rows, off_the_loop


async def _requests(*items: bytes, then_silent: bool = False) -> AsyncIterator[bytes]:
    for item in items:
        yield item
    if then_silent:
        await asyncio.Event().wait()  # a client alive but sending nothing more


def _echo(feed: Iterator[bytes], context: Any) -> Iterator[bytes]:
    for request in feed:
        yield b"ok " + request


@pytest.mark.parametrize(
    "requests",
    [
        pytest.param((b"a",), id="one"),
        pytest.param((b"a", b"b", b"c"), id="three"),
    ],
)
def test_each_request_is_answered_in_order(requests: tuple[bytes, ...]) -> None:
    """The shipped handler's responses come back one per request, in order."""

    async def run() -> list[bytes]:
        return [r async for r in bridged_append_rows(_echo, _requests(*requests), None)]

    assert [b"ok " + r for r in requests] == asyncio.run(run())


def test_a_silent_client_occupies_no_worker_thread() -> None:
    """While a client sends nothing, no step of its handler runs (no thread waits for it)."""
    entered = threading.Event()

    def handler(feed: Iterator[bytes], context: Any) -> Iterator[bytes]:
        entered.set()
        yield from _echo(feed, context)

    async def run() -> list[bytes]:
        answers: list[bytes] = []

        async def consume() -> None:
            async for response in bridged_append_rows(handler, _requests(then_silent=True), None):
                answers.append(response)

        task = asyncio.ensure_future(consume())
        await asyncio.sleep(0.3)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return answers

    nothing: tuple[list[bytes], bool] = ([], False)
    assert nothing == (asyncio.run(run()), entered.is_set())


def test_a_cancelled_connection_frees_a_step_waiting_for_a_request() -> None:
    """A handler waiting for a request the dead client never sends returns once the call ends."""
    finished = threading.Event()

    def pairs(feed: Iterator[bytes], context: Any) -> Iterator[bytes]:
        try:
            while True:  # two requests per response: the second never comes
                yield next(feed) + next(feed)
        except StopIteration:
            return
        finally:
            finished.set()

    async def run() -> bool:
        async def consume() -> None:
            async for _ in bridged_append_rows(pairs, _requests(b"a", then_silent=True), None):
                pass

        task = asyncio.ensure_future(consume())
        await asyncio.sleep(0.3)
        task.cancel()  # what gRPC does when the peer is gone
        await asyncio.gather(task, return_exceptions=True)
        return await asyncio.to_thread(finished.wait, 5.0)

    assert asyncio.run(run())


def test_a_unary_call_blocked_on_a_lock_leaves_the_event_loop_running() -> None:
    """A commit waiting for a lock held elsewhere does not stop the loop serving others."""
    held = threading.Lock()
    held.acquire()

    def commit(request: bytes, context: Any) -> bytes:
        with held:
            return b"committed " + request

    async def run() -> tuple[int, bytes]:
        call = asyncio.ensure_future(off_the_loop(commit)(b"s", None))
        ticks = 0
        for _ in range(10):  # the loop keeps serving while the commit waits
            await asyncio.sleep(0.01)
            ticks += 1
        held.release()
        return ticks, await call

    expected = (10, b"committed s")
    assert expected == asyncio.run(run())
