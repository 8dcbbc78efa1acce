"""The API's gate: the token and the body limit, checked before any route reads a byte.

Every request passes the gate before FastAPI sees it:

1. the probes (``/healthz``, ``/readyz``, ``/metrics``) pass without a token; with
   ``open_reads`` a GET or HEAD anywhere passes too; every other request needs
   ``Authorization: Bearer <token>`` or is answered 401 at once, its body never read;
2. a ``Content-Length`` over ``max_body_bytes`` is answered 413 at once, body unread;
3. the body is read here, at most ``max_body_bytes`` of it: a chunked (or lying) body
   that grows past the limit is answered 413 as soon as it does. The app then gets the
   body from memory.

Notes:
    Answering before the body is read is what keeps an anonymous multi-GB POST from
    costing more than its headers: FastAPI parses a body before it runs a route's
    dependencies, so a token check in a dependency comes too late. Once the gate has
    answered without reading the body, the server closes the connection (the unread
    rest cannot be skipped on HTTP/1.1).
    Tokens are compared with ``hmac.compare_digest``.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass

import orjson
from plowline_cloud.asgi import AsgiApp, Receive, Scope, Send, replay_body

#: Routes that answer without a token: liveness, readiness, Prometheus.
PROBES = frozenset({"/healthz", "/readyz", "/metrics"})
#: The default body limit: a column request is well under 1 KiB.
DEFAULT_MAX_BODY_BYTES = 64 * 1024
_READS = frozenset({"GET", "HEAD"})
UNAUTHORIZED = "missing or invalid bearer token: send 'Authorization: Bearer <token>'"


@dataclass(frozen=True, slots=True)
class Access:
    """Who may call what: the token (None: open to all) and whether reads are open."""

    token: bytes | None
    open_reads: bool = False
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES

    def allows(self, method: str, path: str, authorization: bytes | None) -> bool:
        """Say whether a request with this Authorization header may go on."""
        if self.token is None or path in PROBES:
            return True
        if self.open_reads and method in _READS:
            return True
        scheme, _, given = (authorization or b"").partition(b" ")
        return scheme.lower() == b"bearer" and hmac.compare_digest(given.strip(), self.token)


class AccessGate:
    """ASGI middleware applying ``Access`` and the body limit before the app runs."""

    def __init__(self, app: AsgiApp, access: Access) -> None:
        self._app = app
        self._access = access

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one request: refuse it unread, or hand it on with its body in memory."""
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        headers = {bytes(k).lower(): bytes(v) for k, v in scope.get("headers") or []}
        limit = self._access.max_body_bytes
        if not self._access.allows(scope["method"], scope["path"], headers.get(b"authorization")):
            await _answer(send, 401, UNAUTHORIZED, ((b"www-authenticate", b"Bearer"),))
            return
        if _declared_length(headers) > limit:
            await _answer(send, 413, _too_large(limit))
            return
        body = await _read_at_most(receive, limit)
        if body is None:
            await _answer(send, 413, _too_large(limit))
            return
        await self._app(scope, replay_body(body, receive), send)


def _declared_length(headers: dict[bytes, bytes]) -> int:
    try:
        return int(headers.get(b"content-length", b"0"))
    except ValueError:
        return 0  # the server refuses a malformed length before the app sees it


async def _read_at_most(receive: Receive, limit: int) -> bytes | None:
    """Return the whole body, or None as soon as it grows past ``limit`` bytes."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks)  # the client went away: the app sees the disconnect
        chunk = bytes(message.get("body", b""))
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def _too_large(limit: int) -> str:
    return f"request body over {limit} bytes (the server's --max-body-bytes)"


async def _answer(
    send: Send, status: int, detail: str, extra: tuple[tuple[bytes, bytes], ...] = ()
) -> None:
    body = orjson.dumps({"detail": detail})
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
        *extra,
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})
