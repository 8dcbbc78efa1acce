"""``plowline-loader run`` as a process in exactly-once mode, SIGKILLed mid-stream: every event once.

The test gets a fresh events table (atomic columns) and input subscription (``mode_rig``,
``support.loader_rigs``), so the table's ``COUNT(*)`` and ``COUNT(DISTINCT event_id)`` are
its alone. The loader in each ``load.mode`` run inside the test's Spark session is tested
in ``tests/integration/loader/test_loader_write_modes.py``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from support.loader_rigs import RIG_ACK_DEADLINE_S, ModeRig
from support.timing import wait_for

KILLS = 3
EVENTS_PER_LIFE = 1_000  # published before each loader process starts (kills + 1 lives)
ACK_DEADLINE_S = RIG_ACK_DEADLINE_S  # the rig's subscriptions'
_LOADER_FLAGS = {
    "max_messages": 100,
    "ack_deadline_s": ACK_DEADLINE_S,
    "env": {"PLOWLINE_LOADER_LOG_JSON": "false"},
}


def test_exactly_once_survives_three_kills(
    mode_rig: Callable[[dict[str, Any]], ModeRig],
    tmp_path: Path,
    spawn_loader: Callable[..., subprocess.Popen[bytes]],
) -> None:
    """A loader process SIGKILLed three times mid-stream in exactly-once mode: no loss, no dupes."""
    rig = mode_rig({"mode": "STORAGE_WRITE_API", "stream": "exactly-once"})
    sent = 0
    for life in range(KILLS):
        rig.publish([str(uuid.uuid4()) for _ in range(EVENTS_PER_LIFE)])
        sent += EVENTS_PER_LIFE
        before = rig.counts()[0]
        loader = spawn_loader(
            rig.config_file, rig.resolver_file, tmp_path / f"life-{life}.log", **_LOADER_FLAGS
        )
        try:
            progressed = wait_for(lambda: rig.counts()[0] > before, 180, every_s=0.5)  # noqa: B023
        finally:
            os.killpg(loader.pid, signal.SIGKILL)
            loader.wait(30)
        assert progressed, (tmp_path / f"life-{life}.log").read_text()[-3000:]
    rig.publish([str(uuid.uuid4()) for _ in range(EVENTS_PER_LIFE)])
    sent += EVENTS_PER_LIFE
    last = spawn_loader(rig.config_file, rig.resolver_file, tmp_path / "last.log", **_LOADER_FLAGS)
    try:
        wait_for(lambda: rig.counts()[1] >= sent, 240, every_s=0.5)
        # Real time on purpose: leases the killed processes held lapse on the emulator's
        # wall clock, and their messages come back to this process only then.
        time.sleep(ACK_DEADLINE_S + 5)
    finally:
        last.send_signal(signal.SIGTERM)
        code = last.wait(60)

    expected = (sent, sent, 0)
    assert expected == (*rig.counts(), code), (tmp_path / "last.log").read_text()[-3000:]
