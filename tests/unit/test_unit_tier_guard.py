"""The unit tier's guard: a unit test that starts a process or opens a socket fails, naming it.

``tests/conftest.py`` swaps these calls out around every ``unit`` test (its fixtures too), so
the tier stays what it says: this process only. The refusals are asserted from inside a
unit test, where they must hold.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest


def test_a_subprocess_is_refused_with_where_the_test_belongs() -> None:
    """``subprocess.run`` raises, and the message says where such a test goes."""
    with pytest.raises(RuntimeError, match="may not start a subprocess: move it to tests/tool"):
        subprocess.run([sys.executable, "-c", "pass"], check=False)


def test_a_fork_is_refused() -> None:
    """``os.fork`` raises instead of forking the test process."""
    with pytest.raises(RuntimeError, match="may not fork"):
        os.fork()


@pytest.mark.parametrize(
    ("call", "what"),
    [
        pytest.param(lambda s: s.bind(("127.0.0.1", 0)), "open a server socket", id="bind"),
        pytest.param(lambda s: s.connect(("127.0.0.1", 9)), "open a connection", id="connect"),
        pytest.param(
            lambda s: s.connect_ex(("127.0.0.1", 9)), "open a connection", id="connect_ex"
        ),
    ],
)
def test_a_socket_is_refused_even_on_loopback(call: object, what: str) -> None:
    """A server or a client socket, loopback included, is refused."""
    with socket.socket() as sock, pytest.raises(RuntimeError, match=f"may not {what}"):
        call(sock)  # type: ignore[operator]


def test_a_socket_pair_in_this_process_is_allowed() -> None:
    """``socket.socketpair`` (asyncio's self-pipe, in-process) still works."""
    left, right = socket.socketpair()
    with left, right:
        left.sendall(b"x")
        assert right.recv(1) == b"x"
