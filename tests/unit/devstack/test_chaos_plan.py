"""The chaos run's pure parts: the seeded kill schedule, its traffic, the write modes' configs."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

from plowline_core.config import BigQueryConfig, LoadKind, WriteStreamKind
from plowline_devstack.demo.chaos import OLD_AGE, chaos_lines, kill_schedule
from plowline_devstack.demo.run import EXAMPLES
from plowline_devstack.demo.services import SERVICE_NAMES
from plowline_devstack.demo.write_modes import WRITE_MODES, write_config

NOW = datetime(2026, 11, 24, 9, 0, tzinfo=UTC)


def test_chaos_schedule_kills_each_service_the_asked_number_of_times() -> None:
    """Each of the four services is killed ``kills`` times, at moments within the window."""
    schedule = kill_schedule(seed=3, kills=3, window=60.0)
    expected = (dict.fromkeys(SERVICE_NAMES, 3), True)
    actual = (
        dict(Counter(kill.service for kill in schedule)),
        all(0.0 <= kill.at <= 60.0 for kill in schedule),
    )
    assert expected == actual


def test_chaos_schedule_is_ordered_and_seeded() -> None:
    """The same seed gives the same schedule, in time order; another seed another one."""
    first, again = kill_schedule(7, 3, 90.0), kill_schedule(7, 3, 90.0)
    expected = (True, True, False)
    actual = (first == again, list(first) == sorted(first), first == kill_schedule(8, 3, 90.0))
    assert expected == actual


def test_chaos_lines_mix_years_old_events_with_fresh_ones() -> None:
    """A quarter of the lines are three years old, spread among the fresh ones; ids are unique."""
    lines = chaos_lines(400, seed=5, now=NOW)
    old_year = str((NOW - OLD_AGE).year)
    old_at = [i for i, g in enumerate(lines) if g.good and g.line.split("\t")[3][:4] == old_year]
    expected = (400, 400, 20, True, True)
    actual = (
        len(lines),
        len({g.event_id for g in lines}),
        sum(1 for g in lines if not g.good),
        80 <= len(old_at) <= 100,  # 100 old lines, ~5% of them malformed
        min(old_at) < 100 and max(old_at) > 300,
    )
    assert expected == actual


def test_chaos_write_config_sets_each_mode_load(tmp_path: Path) -> None:
    """The config written for each mode parses, with that mode's load.mode and stream."""
    loads = {
        name: BigQueryConfig.parse(
            json.loads(write_config(EXAMPLES / "config.json", mode, tmp_path).read_text())
        ).load
        for name, mode in WRITE_MODES.items()
    }
    expected = {
        "insert-all": (LoadKind.STREAMING_INSERTS, None),
        "exactly-once": (LoadKind.STORAGE_WRITE_API, WriteStreamKind.EXACTLY_ONCE),
        "write-api-default": (LoadKind.STORAGE_WRITE_API, WriteStreamKind.DEFAULT),
        "file-loads": (LoadKind.FILE_LOADS, None),
    }
    assert expected == {name: (load.mode, load.stream) for name, load in loads.items()}
