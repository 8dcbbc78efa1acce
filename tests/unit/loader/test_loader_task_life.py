"""How long a loader task lives: long-lived where a task may write many slices, else one slice."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from plowline_core.schema.entity import ColumnMode
from plowline_loader.bootstrap import WorkerConfig, load_bigquery_config
from plowline_loader.settings import load_settings
from plowline_loader.source.pulls import TASK_SECONDS
from plowline_loader.streaming import StreamSettings, long_lived_task_s
from support.configs import STREAMING_INSERTS, bigquery_config


def _config(tmp_path: Path, load: dict[str, Any]) -> WorkerConfig:
    config_file = tmp_path / "config.json"
    config_file.write_text(json.dumps(bigquery_config(name="task life test", load=load)))
    return WorkerConfig(load_bigquery_config(config_file), "{}", ".", ColumnMode.FULL, "0")


@pytest.mark.parametrize(
    ("load", "expected"),
    [
        pytest.param(STREAMING_INSERTS, 15.0, id="insert-all"),
        pytest.param({"mode": "STORAGE_WRITE_API", "stream": "default"}, 15.0, id="write-api"),
        pytest.param({"mode": "STORAGE_WRITE_API", "stream": "exactly-once"}, 0.0, id="e-once"),
        pytest.param({"mode": "FILE_LOADS", "frequency": 100}, 0.0, id="file-loads"),
    ],
)
def test_tasks_live_long_where_a_task_may_write_many_slices(
    tmp_path: Path, load: dict[str, Any], expected: float
) -> None:
    """Load jobs (one job a task, a daily quota) and exactly-once (a shuffle between reading
    and writing) read one slice a task; the other modes keep their tasks' 15 s."""
    assert expected == long_lived_task_s(15.0, _config(tmp_path, dict(load)))


def test_the_command_and_the_stream_share_one_default() -> None:
    """``--task-seconds`` unset and a StreamSettings built in code both live TASK_SECONDS."""
    settings = load_settings({"config": "c.json", "resolver": "r.json"})
    expected = (TASK_SECONDS, TASK_SECONDS)
    assert expected == (settings.task_seconds, StreamSettings(checkpoint="").task_seconds)
