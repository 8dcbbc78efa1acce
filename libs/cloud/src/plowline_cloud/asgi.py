"""The ASGI types our middleware speaks, and a request body handed on from memory.

Notes:
    Typed in our own words (plain mappings and callables), so neither the mutator's gate
    nor the local stack's BigQuery interception depends on Starlette's types.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
AsgiApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def replay_body(body: bytes, receive: Receive) -> Receive:
    """Return a ``receive`` that hands on ``body`` (already read) as one message.

    After the body it waits on ``receive`` itself (for the disconnect), as a server does.
    """
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
