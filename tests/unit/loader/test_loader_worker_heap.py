"""The Python worker's heap: frozen once, at the start of its second task, and collected
seldom while a task runs."""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from plowline_cloud.pubsub.pulled import PulledMessage
from plowline_core.schema.entity import ColumnMode
from plowline_loader.bootstrap import WorkerConfig, load_bigquery_config, task_processor
from plowline_loader.partition import StreamingPartition
from plowline_loader.spark import worker_heap
from plowline_loader.spark.worker_heap import TASK_GC_THRESHOLD, freeze_worker_heap, task_collector
from support.configs import bigquery_config


@pytest.fixture
def fresh_worker(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A process that has started no task; the heap unfrozen again afterwards."""
    monkeypatch.setattr(worker_heap, "_tasks_started", {})
    gc.unfreeze()
    yield
    gc.unfreeze()


@pytest.mark.usefixtures("fresh_worker")
def test_second_task_freezes_the_heap_once() -> None:
    """The first task builds the worker's clients and caches; the second freezes them, once."""
    expected = [False, True, False, False]
    assert expected == [freeze_worker_heap() for _ in expected]


@pytest.mark.usefixtures("fresh_worker")
def test_frozen_objects_are_out_of_the_collectors_sight() -> None:
    """After the freeze the objects alive are in the permanent generation, not collected."""
    freeze_worker_heap()
    before = gc.get_freeze_count()
    freeze_worker_heap()
    expected = (0, True)
    assert expected == (before, gc.get_freeze_count() > 0)


def _config(tmp_path: Path) -> WorkerConfig:
    config_file = tmp_path / "config.json"
    config_file.write_text(json.dumps(_CONFIG))
    return WorkerConfig(
        load_bigquery_config(config_file), "{}", str(tmp_path), ColumnMode.FULL, "0"
    )


_CONFIG = bigquery_config(name="worker heap test")


@pytest.mark.usefixtures("fresh_worker")
def test_a_task_reads_its_messages_with_the_task_threshold(tmp_path: Path) -> None:
    """While a task reads its messages the young generation waits for TASK_GC_THRESHOLD
    allocations; Python's thresholds are back once the task reported."""
    before = gc.get_threshold()
    seen: list[tuple[int, int, int]] = []

    def messages() -> Iterator[PulledMessage]:
        seen.append(gc.get_threshold())
        yield from ()

    list(StreamingPartition(_config(tmp_path), task_processor)([messages()]))

    expected = ([(TASK_GC_THRESHOLD, *before[1:])], before)
    assert expected == (seen, gc.get_threshold())


def test_the_thresholds_come_back_when_the_task_fails() -> None:
    """A task that raises leaves the collector as it found it."""
    before = gc.get_threshold()

    with pytest.raises(RuntimeError), task_collector(12_345):
        raise RuntimeError("a bug in the task")

    assert before == gc.get_threshold()
