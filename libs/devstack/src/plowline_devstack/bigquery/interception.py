"""Route-level interception of bqemulator's REST app: the one seam every correction uses.

A :class:`Correction` names a REST route (method and path pattern) and an async handler.
:class:`CorrectedApp` wraps the emulator's ASGI app; a request on a corrected route is
read in full and handed to the handler as an :class:`Exchange`, which may answer by
itself or ``forward`` a (possibly rewritten) body to the emulator's own handler and
post-process its reply. Every other request goes straight to the emulator.

Notes:
    Wrapping at the ASGI boundary keeps the emulator's handlers, dependencies and
    middleware untouched: a correction sees exactly what a client sent and what the
    emulator answered, nothing of FastAPI's internals.
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
from plowline_cloud.asgi import AsgiApp, Message, Receive, Scope, Send, replay_body


def loads(data: bytes) -> Any:
    """Decode JSON fast (orjson); fall back to the stdlib for integers beyond 64 bits."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)


def dumps(value: Any) -> bytes:
    """Encode JSON fast (orjson); fall back to the stdlib for integers beyond 64 bits."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return json.dumps(value).encode()


@dataclass(frozen=True, slots=True)
class Reply:
    """An HTTP answer: status, headers (without content-length) and body."""

    status: int
    body: bytes
    headers: tuple[tuple[bytes, bytes], ...] = ((b"content-type", b"application/json"),)

    def json(self) -> Any:
        """Decode the body as JSON."""
        return loads(self.body or b"null")

    @classmethod
    def of_json(cls, status: int, payload: Any) -> Reply:
        """Build a JSON reply."""
        return cls(status, dumps(payload))

    @classmethod
    def invalid(cls, message: str) -> Reply:
        """Build BigQuery's 400 ``invalid`` error reply carrying ``message``."""
        error = {"message": message, "domain": "global", "reason": "invalid"}
        body = {"code": 400, "message": message, "errors": [error], "status": "INVALID_ARGUMENT"}
        return cls.of_json(400, {"error": body})


@dataclass(frozen=True, slots=True)
class Exchange:
    """One intercepted request: path parameters, body, the emulator's context, a way on."""

    params: dict[str, str]
    body: bytes
    context: Any
    forward: Callable[[bytes], Awaitable[Reply]]
    headers: dict[bytes, bytes] = field(default_factory=dict)
    """Request headers, names lower-cased."""

    def json(self) -> Any:
        """Decode the request body as JSON (``{}`` when empty)."""
        return loads(self.body) if self.body else {}


Handler = Callable[[Exchange], Awaitable[Reply]]


@dataclass(frozen=True, slots=True)
class Correction:
    """A fidelity correction: the routes it owns and their handler, or a patch run at launch.

    Notes:
        Most corrections wrap REST routes (``methods``, ``paths``, ``handler``); the few
        whose defect sits below any route (DDL rendering) use ``patch`` instead.
    """

    name: str
    summary: str
    methods: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    handler: Handler | None = None
    patch: Callable[[], None] | None = None
    _patterns: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        compiled = tuple(re.compile(_to_regex(path)) for path in self.paths)
        object.__setattr__(self, "_patterns", compiled)

    def match(self, method: str, path: str) -> dict[str, str] | None:
        """Return the path parameters when this correction owns the route, else None."""
        if method not in self.methods:
            return None
        for pattern in self._patterns:
            found = pattern.fullmatch(path)
            if found:
                return found.groupdict()
        return None


def _to_regex(path: str) -> str:
    """Turn ``/a/{name}/b`` into a regex with one named group per segment parameter."""
    return re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", path)


class CorrectedApp:
    """An ASGI app that routes corrected requests through their correction handlers.

    Notes:
        Every correction that owns a route sees the request, in catalogue order: each
        one's ``forward`` reaches the next, and the last one's reaches the emulator.
    """

    def __init__(self, inner: AsgiApp, context: Any, corrections: tuple[Correction, ...]) -> None:
        self._inner = inner
        self._context = context
        self._corrections = corrections

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one ASGI connection."""
        if scope["type"] == "http":
            chain = [
                (correction, params)
                for correction in self._corrections
                if correction.handler is not None
                and (params := correction.match(scope["method"], scope["path"])) is not None
            ]
            if chain:
                await self._correct(chain, scope, receive, send)
                return
        await self._inner(scope, receive, send)

    async def _correct(
        self,
        chain: list[tuple[Correction, dict[str, str]]],
        scope: Scope,
        receive: Receive,
        send: Send,
    ) -> None:
        body, gzipped = await _read_body(scope, receive)
        inner_scope = _without_gzip(scope) if gzipped else scope
        headers = {bytes(k).lower(): bytes(v) for k, v in inner_scope.get("headers") or []}

        async def step(index: int, new_body: bytes) -> Reply:
            if index == len(chain):
                return await _call_inner(self._inner, inner_scope, receive, new_body)
            correction, params = chain[index]

            async def forward(next_body: bytes) -> Reply:
                return await step(index + 1, next_body)

            assert correction.handler is not None
            exchange = Exchange(params, new_body, self._context, forward, headers)
            return await correction.handler(exchange)

        await _send_reply(send, await step(0, body))


async def _read_body(scope: Scope, receive: Receive) -> tuple[bytes, bool]:
    """Read the whole request body; gunzip it when the client compressed it."""
    chunks: list[bytes] = []
    more = True
    while more:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        more = bool(message.get("more_body", False))
    body = b"".join(chunks)
    headers = dict(scope.get("headers") or [])
    gzipped = headers.get(b"content-encoding", b"").lower() == b"gzip"
    return (gzip.decompress(body) if gzipped and body else body), gzipped


def _without_gzip(scope: Scope) -> Scope:
    """Drop ``content-encoding`` so the emulator does not gunzip a plain body again."""
    headers = [(k, v) for k, v in scope.get("headers") or [] if k.lower() != b"content-encoding"]
    return {**scope, "headers": headers}


async def _call_inner(inner: AsgiApp, scope: Scope, receive: Receive, body: bytes) -> Reply:
    """Run the emulator's own handler on ``body`` and capture its reply."""
    headers = [(k, v) for k, v in scope.get("headers") or [] if k.lower() != b"content-length"]
    headers.append((b"content-length", str(len(body)).encode()))
    status = 500
    out_headers: list[tuple[bytes, bytes]] = []
    chunks: list[bytes] = []

    async def capture(message: Message) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = int(message["status"])
            out_headers.extend(
                (bytes(k), bytes(v))
                for k, v in message.get("headers") or []
                if bytes(k).lower() != b"content-length"
            )
        elif message["type"] == "http.response.body":
            chunks.append(bytes(message.get("body", b"")))

    await inner({**scope, "headers": headers}, replay_body(body, receive), capture)
    return Reply(status, b"".join(chunks), tuple(out_headers))


async def _send_reply(send: Send, reply: Reply) -> None:
    """Write ``reply`` to the client with a correct content-length."""
    headers = [(k, v) for k, v in reply.headers if k.lower() != b"content-length"]
    headers.append((b"content-length", str(len(reply.body)).encode()))
    await send({"type": "http.response.start", "status": reply.status, "headers": headers})
    await send({"type": "http.response.body", "body": reply.body, "more_body": False})
