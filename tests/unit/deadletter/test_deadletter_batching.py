"""The Batcher decides when buffered bad rows become an object."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from plowline_core.testing.clock import FixedClock
from plowline_deadletter.batching import Batcher, window_start

START = datetime(2026, 11, 22, 5, 13, 0, tzinfo=UTC)


@pytest.fixture
def clock() -> FixedClock:
    """A clock at the start of a one-minute window."""
    return FixedClock(START)


def test_nothing_is_due_before_the_window_closes(clock: FixedClock) -> None:
    """A buffer stays put while its window is open."""
    batcher: Batcher[str] = Batcher(window=60, max_rows=10)
    batcher.add("a", "row", clock.now())
    clock.advance(59.9)
    expected: list[object] = []
    assert expected == batcher.due(clock.now())


def test_a_closed_window_is_due_with_its_items_in_order(clock: FixedClock) -> None:
    """Once the window closed, the buffer is handed out whole and in arrival order."""
    batcher: Batcher[str] = Batcher(window=60, max_rows=10)
    for item in ("r1", "r2", "r3"):
        batcher.add("a", item, clock.now())
    clock.advance(60)
    [batch] = batcher.due(clock.now())
    expected = ("a", START, ("r1", "r2", "r3"))
    assert expected == (batch.key, batch.window_start, batch.items)


def test_keys_are_buffered_apart(clock: FixedClock) -> None:
    """Each key gets its own batch."""
    batcher: Batcher[str] = Batcher(window=60, max_rows=10)
    batcher.add("a", "r1", clock.now())
    batcher.add("b", "r2", clock.now())
    clock.advance(61)
    expected = {"a": ("r1",), "b": ("r2",)}
    assert expected == {b.key: b.items for b in batcher.due(clock.now())}


def test_a_full_buffer_is_returned_by_add(clock: FixedClock) -> None:
    """Reaching max_rows hands the batch out at once, without waiting for the window."""
    batcher: Batcher[int] = Batcher(window=60, max_rows=3)
    results = [batcher.add("a", n, clock.now()) for n in range(3)]
    expected = [[], [], [(0, 1, 2)]]
    assert expected == [[b.items for b in r] for r in results]


def test_an_add_after_the_window_closes_the_old_buffer(clock: FixedClock) -> None:
    """A row arriving in a new window flushes the previous window's buffer first."""
    batcher: Batcher[str] = Batcher(window=60, max_rows=10)
    batcher.add("a", "old", clock.now())
    clock.advance(90)
    [batch] = batcher.add("a", "new", clock.now())
    expected = (("old",), 1)
    assert expected == (batch.items, batcher.pending)


def test_drain_returns_everything(clock: FixedClock) -> None:
    """On shutdown every buffered item is handed out and nothing stays pending."""
    batcher: Batcher[str] = Batcher(window=60, max_rows=10)
    batcher.add("a", "r1", clock.now())
    batcher.add("b", "r2", clock.now())
    drained = batcher.drain()
    expected = (2, 0)
    assert expected == (sum(len(b.items) for b in drained), batcher.pending)


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [
        pytest.param(0, START, id="on-the-boundary"),
        pytest.param(59.5, START, id="inside"),
        pytest.param(60, datetime(2026, 11, 22, 5, 14, tzinfo=UTC), id="next"),
    ],
)
def test_windows_are_aligned_on_the_epoch(seconds: float, expected: datetime) -> None:
    """Window starts are multiples of the window length, so instances agree on names."""
    clock = FixedClock(START)
    clock.advance(seconds)
    assert expected == window_start(clock.now(), 60)
