"""Which executor ran a task, as the Python worker can tell from the environment its executor set."""

from __future__ import annotations

import pytest
from plowline_loader.partition import executor_id

_NAMES = ("SPARK_EXECUTOR_ID", "SPARK_LOG_URL_STDERR", "CONTAINER_ID", "SPARK_EXECUTOR_DIRS")
_STANDALONE_URL = "http://127.0.0.1:36799/logPage/?appId=app-1-0000&executorId=1&logType=stderr"


@pytest.mark.parametrize(
    ("environment", "expected"),
    [
        pytest.param({"SPARK_EXECUTOR_ID": "3"}, "3", id="kubernetes"),
        pytest.param({"SPARK_LOG_URL_STDERR": _STANDALONE_URL}, "1", id="standalone"),
        pytest.param({"CONTAINER_ID": "container_01_0002"}, "container_01_0002", id="yarn"),
        pytest.param({}, "driver", id="local-mode"),
    ],
)
def test_executor_is_named_by_what_its_cluster_manager_sets(
    monkeypatch: pytest.MonkeyPatch, environment: dict[str, str], expected: str
) -> None:
    """The executor id comes from the variable each cluster manager gives its executors."""
    for name in _NAMES:
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)

    assert expected == executor_id()


def test_standalone_without_worker_ui_is_named_by_its_own_directory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A standalone executor without a log URL is told apart by its own executor directory."""
    for name in _NAMES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SPARK_EXECUTOR_DIRS", "/tmp/spark-1/executor-ab12")

    assert executor_id().endswith(":executor-ab12")
