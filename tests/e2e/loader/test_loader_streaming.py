"""``plowline-loader run`` as a process on the local stack: a SIGKILL mid-stream, and Ctrl-C.

The loader runs as its own process group (``spawn_loader``) over a ``streaming_rig``
(``support.loader_rigs``: a fresh input topic, observation subscriptions, the ``com.acme``
schemas behind an HTTP registry). The streaming loader run inside the test's Spark session
is tested in ``tests/integration/loader/test_loader_streaming.py``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path

from support.loader_rigs import StreamingRig, good_line
from support.timing import wait_for


def test_loader_killed_mid_stream_loses_no_event(
    streaming_rig: StreamingRig,
    tmp_path: Path,
    spawn_loader: Callable[..., subprocess.Popen[bytes]],
) -> None:
    """A loader process SIGKILLed mid-stream and restarted accounts for every event id."""
    rig = streaming_rig
    ids = [str(uuid.uuid4()) for _ in range(1500)]
    bad_ids = set(ids[::50])
    lines = [
        f"broken {event_id}" if event_id in bad_ids else good_line(event_id, n)
        for n, event_id in enumerate(ids)
    ]
    rig.publish(lines)
    first = spawn_loader(
        rig.config_file, rig.resolver_file, tmp_path / "first.log", max_messages=200
    )
    try:
        wait_for(lambda: rig.table_ids(set(ids)), 180, every_s=0.5)
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(30)
    second = spawn_loader(
        rig.config_file, rig.resolver_file, tmp_path / "second.log", max_messages=200
    )
    seen: set[str] = set()

    def accounted() -> bool:
        seen.update(json.loads(d)["event_id"] for d in rig.drain("failed-inserts"))
        seen.update(_bad_row_ids(rig.drain("bad-rows"), bad_ids))
        return set(ids) <= seen | rig.table_ids(set(ids))

    try:
        done = wait_for(accounted, 240, every_s=0.5)
    finally:
        second.send_signal(signal.SIGTERM)
        code = second.wait(60)
    expected = (True, 0)
    assert expected == (done, code), (tmp_path / "second.log").read_text()[-3000:]


def test_ctrl_c_stops_the_loader_as_sigterm_does(
    streaming_rig: StreamingRig,
    tmp_path: Path,
    spawn_loader: Callable[..., subprocess.Popen[bytes]],
) -> None:
    """SIGINT to the loader's process group (Ctrl-C in a terminal) is a graceful stop: exit 0."""
    rig = streaming_rig
    ids = [str(uuid.uuid4()) for _ in range(100)]
    rig.publish([good_line(event_id, n) for n, event_id in enumerate(ids)])
    log = tmp_path / "loader.log"
    loader = spawn_loader(rig.config_file, rig.resolver_file, log, max_messages=200)
    try:
        landed = wait_for(lambda: rig.table_ids(set(ids)) == set(ids), 180, every_s=0.5)
    finally:
        os.killpg(loader.pid, signal.SIGINT)
        code = loader.wait(60)
    text = log.read_text()
    expected = (True, 0, False)
    assert expected == (landed, code, "KeyboardInterrupt" in text), text[-3000:]


def _bad_row_ids(payloads: list[bytes], bad_ids: set[str]) -> set[str]:
    found: set[str] = set()
    for payload in payloads:
        text = payload.decode()
        found.update(event_id for event_id in bad_ids if event_id in text)
    return found
