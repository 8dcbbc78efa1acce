"""``plowline-mutator listen`` as a real process on the local stack serves its probes on ``--port``."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from plowline_devstack.stack.lifecycle import LocalStack
from support.mutator import MutatorProcess, answers, http_get, mutator_process


@pytest.fixture
def listening(local_stack: LocalStack, tmp_path: Path) -> Iterator[MutatorProcess]:
    """Start listen on the example config's types subscription; yield it once ready."""
    with mutator_process(local_stack, tmp_path, "listen", ready=answers("/readyz")) as running:
        yield running


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        pytest.param("/healthz", '"alive":true', id="healthz"),
        pytest.param("/readyz", "ready", id="readyz"),
        pytest.param("/metrics", "plowline_mutator_types_received_total", id="metrics"),
    ],
)
def test_listen_answers_its_probes_on_its_port(
    listening: MutatorProcess, path: str, expected: str
) -> None:
    """listen serves /healthz, /readyz and /metrics on --port, each 200 while the stream runs."""
    status, body = listening.get(path)

    assert (status, expected in body) == (200, True), body[:500]


def test_listen_stops_its_probes_and_exits_zero_after_sigterm(listening: MutatorProcess) -> None:
    """SIGTERM stops listen with exit code 0 and releases its port."""
    listening.process.send_signal(signal.SIGTERM)
    code = listening.process.wait(timeout=60)

    assert (code, http_get(listening.port, "/healthz")[0]) == (0, 0)
