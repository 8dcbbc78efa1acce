"""The Python worker's heap: frozen once, at the start of its second task (issue 17)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
from plowline_loader import partition
from plowline_loader.partition import freeze_worker_heap


@pytest.fixture
def fresh_worker(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A process that has started no task; the heap unfrozen again afterwards."""
    monkeypatch.setattr(partition, "_tasks_started", {})
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
