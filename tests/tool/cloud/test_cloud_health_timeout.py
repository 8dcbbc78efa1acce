"""The health server closes a connection that stays silent, so no client holds its threads."""

from __future__ import annotations

import socket
import time

import httpx
from plowline_cloud.metrics import MetricsRegistry, start_health_server


def test_a_silent_connection_is_closed_after_the_socket_timeout() -> None:
    """A client that connects and sends nothing is hung up on after ``socket_timeout``."""
    server = start_health_server(
        0, MetricsRegistry("t"), lambda: True, "127.0.0.1", socket_timeout=0.2
    )
    try:
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as silent:
            started = time.monotonic()
            closed = silent.recv(1) == b""  # b"": the server hung up; a 5 s timeout raises
            waited = time.monotonic() - started
        assert (closed, waited < 4) == (True, True)
    finally:
        server.stop()


def test_probes_still_answer_with_a_socket_timeout() -> None:
    """A prompt request is answered as before."""
    server = start_health_server(
        0, MetricsRegistry("t"), lambda: True, "127.0.0.1", socket_timeout=0.2
    )
    try:
        expected = 200
        assert (
            expected == httpx.get(f"http://127.0.0.1:{server.port}/readyz", timeout=5).status_code
        )
    finally:
        server.stop()
