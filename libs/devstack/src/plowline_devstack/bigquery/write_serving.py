"""Correction: one Write API client's death or silence never stalls another client.

Real BigQuery: a client killed or frozen in the middle of an AppendRows connection costs
nobody else anything; REST calls and other writers are answered as before, and the
server drops the dead connection on its own.

bqemulator 1.4.0 serves the Storage Write API on ``grpc.aio`` in the event loop that
also serves REST, with handlers written for the synchronous stack, and that costs
other clients in three ways:

* Each AppendRows connection holds a thread of the event loop's default executor
  (``min(32, cpus + 4)`` threads) for its whole life, most of it waiting for the
  client's next request. A frozen client keeps its thread until the server notices the
  peer is gone (no keepalive: hours); a killed one may too (gRPC's bridge then puts the
  end of the stream into a one-slot queue nobody drains any more; not seen in tests).
  Once the threads are taken, no new connection is served, and every REST
  ``tables.patch`` (its widening lock is taken on that executor) waits with them.
* The unary calls (CreateWriteStream, FinalizeWriteStream, BatchCommitWriteStreams,
  GetWriteStream, FlushRows) run synchronously *on the event loop*: the emulator's
  error-translating interceptor wraps them in a coroutine that calls them directly.
  A commit runs DuckDB there and takes the append lock and the widening lock
  (:data:`.storage_lock.WIDENING`) with a blocking acquire. A ``tables.patch`` holds
  the widening lock across awaits (it is taken for its coroutine by a worker thread);
  a commit arriving meanwhile blocks the loop on that lock, the patch can never resume
  to release it, and every REST call and every RPC waits for ever (the emulator's
  stack then shows the loop thread in ``flush_to_target``'s ``with WIDENING``).
* The gRPC server sends no keepalive pings, so a silent peer is never noticed.

The corrected stand-in serves AppendRows with an async handler: requests are read on
the event loop (a silent client costs no thread) and each request's work runs the
shipped handler on a worker thread of a pool of its own; a connection that ends,
breaks or is cancelled closes its request feed, so its handler finishes and no thread
waits on a dead client. Unary calls run on that pool too, never on the loop. The
server pings every :data:`KEEPALIVE_TIME_MS` and drops a peer that does not answer
within :data:`KEEPALIVE_TIMEOUT_MS`; synchronous handlers left (health, Read API) run
on a pool of their own, not the loop's default executor.
"""

from __future__ import annotations

import asyncio
import queue
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, cast

import bqemulator.grpc_api.write_servicer as servicer
import grpc

from plowline_devstack.bigquery.interception import Correction

KEEPALIVE_TIME_MS = 10_000
"""The server pings each connection this often (Google's frontends ping too)."""
KEEPALIVE_TIMEOUT_MS = 5_000
"""A peer that does not answer a ping within this long is dropped, its calls cancelled."""
KEEPALIVE_OPTIONS: tuple[tuple[str, int], ...] = (
    ("grpc.keepalive_time_ms", KEEPALIVE_TIME_MS),
    ("grpc.keepalive_timeout_ms", KEEPALIVE_TIMEOUT_MS),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
)
WORKERS = 32
"""Threads that run Write API work (a request's append, a commit): busy only while working."""
SYNC_WORKERS = 32
"""Threads for the synchronous handlers left (health, Read API streams, for their life)."""

_pools: dict[str, ThreadPoolExecutor] = {}
_END = object()
_Handler = servicer.BigQueryWriteHandler


def worker_pool() -> ThreadPoolExecutor:
    """Return the pool that runs Write API work, started on first use."""
    return _pool("bq-write", WORKERS)


def _pool(name: str, workers: int) -> ThreadPoolExecutor:
    if name not in _pools:
        _pools[name] = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=name)
    return _pools[name]


class RequestFeed:
    """The requests of one AppendRows connection, as the shipped handler iterates them.

    Notes:
        Filled on the event loop, read by a worker thread. Once closed it stays closed:
        a handler asking for more then sees the end of the stream and returns.
    """

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()

    def put(self, request: bytes) -> None:
        """Hand one request to the handler."""
        self._queue.put(request)

    def close(self) -> None:
        """End the stream: the handler's next read ends its loop."""
        self._queue.put(_END)

    def empty(self) -> bool:
        """True when no request (nor the end) is waiting."""
        return self._queue.empty()

    def __iter__(self) -> Iterator[bytes]:
        return self

    def __next__(self) -> bytes:
        item = self._queue.get()
        if item is _END:
            self._queue.put(_END)
            raise StopIteration
        assert isinstance(item, bytes)
        return item


async def bridged_append_rows(
    handle: Callable[[Iterator[bytes], Any], Iterator[bytes]],
    requests: AsyncIterator[bytes],
    context: Any,
) -> AsyncIterator[bytes]:
    """Serve one AppendRows connection with the synchronous ``handle``, off the event loop.

    A step of ``handle`` (up to its next response) runs on the worker pool only once a
    request is waiting, so no thread waits for the client; the feed is closed when the
    client half-closes, and when this connection ends for any reason (the client gone,
    the call cancelled), so a step under way returns as soon as its request is done.
    """
    loop = asyncio.get_running_loop()
    feed = RequestFeed()
    waiting = asyncio.Event()

    async def read() -> None:
        try:
            async for request in requests:
                feed.put(request)
                waiting.set()
        finally:
            feed.close()
            waiting.set()

    reader = asyncio.ensure_future(read())
    reader.add_done_callback(_forget)
    responses = handle(feed, context)
    try:
        while True:
            await waiting.wait()
            response = await loop.run_in_executor(worker_pool(), next, responses, _END)
            if response is _END:  # the handler returned
                return
            yield cast(bytes, response)
            if feed.empty() and not reader.done():
                waiting.clear()
    finally:
        reader.cancel()
        feed.close()


def _forget(reader: asyncio.Future[None]) -> None:
    """Retrieve the reader's end (a read after the call ended raises): it is not an error."""
    if not reader.cancelled():
        reader.exception()


def off_the_loop(method: Callable[[bytes, Any], bytes]) -> Callable[[bytes, Any], Any]:
    """Return a coroutine handler that runs the synchronous unary ``method`` on the pool."""

    async def call(request: bytes, context: Any) -> bytes:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(worker_pool(), method, request, context)

    return call


def install_serving() -> None:
    """Route AppendRows and the unary Write API calls through the worker pool; add keepalive."""
    shipped_service = _Handler.service

    def service(self: Any, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        if details.method == servicer._APPEND_ROWS:
            handle = self._handle_append_rows  # the handler as corrected and faulted

            async def append_rows(
                requests: AsyncIterator[bytes], context: Any
            ) -> AsyncIterator[bytes]:
                async for response in bridged_append_rows(handle, requests, context):
                    yield response

            return grpc.stream_stream_rpc_method_handler(append_rows)
        handler = shipped_service(self, details)
        if handler is not None and handler.unary_unary is not None:
            return grpc.unary_unary_rpc_method_handler(
                off_the_loop(handler.unary_unary),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        return handler

    _Handler.service = service  # type: ignore[method-assign,assignment]  # the seam
    _install_keepalive()


def _install_keepalive() -> None:
    """Build the emulator's gRPC server with keepalive and a pool of its own for sync handlers."""
    import bqemulator.server

    shipped_build = bqemulator.server.build_grpc_server  # type: ignore[attr-defined]  # the seam: imported, not re-exported

    def build_grpc_server(context: Any) -> Any:
        shipped_server = grpc.aio.server

        def server(*args: Any, **kwargs: Any) -> Any:
            kwargs["options"] = [*kwargs.get("options", ()), *KEEPALIVE_OPTIONS]
            kwargs.setdefault("migration_thread_pool", _pool("bq-grpc-sync", SYNC_WORKERS))
            return shipped_server(*args, **kwargs)

        grpc.aio.server = server  # only while the emulator builds its one server
        try:
            return shipped_build(context)
        finally:
            grpc.aio.server = shipped_server

    bqemulator.server.build_grpc_server = build_grpc_server  # type: ignore[attr-defined]  # see above


WRITE_API_SERVING = Correction(
    name="write-api-serving",
    summary="a dead or silent Write API client stalls no other client (REST or gRPC)",
    patch=install_serving,
)
