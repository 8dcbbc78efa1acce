"""Fixtures of the cloud adapters' unit tests: Google's retry loops on a fake clock."""

from __future__ import annotations

import pytest
from google.api_core.retry import retry_base, retry_unary


class _FakeClock:
    """``time`` for api_core's retry loops: sleeping moves the clock, instantly."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def instant_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Google's clients retry and poll on a fake clock (tests never sleep)."""
    clock = _FakeClock()
    monkeypatch.setattr(retry_unary, "time", clock)
    monkeypatch.setattr(retry_base, "time", clock)
