"""Endpoints that misbehave on purpose, for the tiers' start-up tests (a plugin).

Registered once by the root conftest (``pytest_plugins``):

* ``silent_endpoint``: ``127.0.0.1:port`` of a server that accepts every connection and
  never answers (a Google stand-in that hangs), closed at the end of the test.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest


@pytest.fixture
def silent_endpoint() -> Iterator[str]:
    """``127.0.0.1:port`` of a server that accepts every connection and never answers."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stopping = threading.Event()

    def accept() -> None:
        while not stopping.is_set():
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            held.append(connection)  # read nothing, answer nothing, close nothing

    thread = threading.Thread(target=accept, name="silent-endpoint", daemon=True)
    thread.start()
    yield f"127.0.0.1:{listener.getsockname()[1]}"
    stopping.set()
    listener.close()
    for connection in held:
        connection.close()
    thread.join(5)
