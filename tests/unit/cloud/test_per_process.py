"""Specification of ``PerProcess``: one value per key and per process, built on first use."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import pytest
from plowline_cloud import per_process
from plowline_cloud.per_process import PerProcess

pytestmark = pytest.mark.unit


class _Builds:
    """A builder that counts what it built, per key."""

    def __init__(self) -> None:
        self.keys: list[str] = []

    def __call__(self, key: str) -> object:
        self.keys.append(key)
        return object()


def test_a_value_is_built_once_per_key() -> None:
    """Asking twice for one key returns the same value; each key gets its own."""
    builds = _Builds()
    values = PerProcess(builds)
    first, again, other = values("a"), values("a"), values("b")
    assert (first is again, first is other, builds.keys) == (True, False, ["a", "b"])


def test_threads_asking_at_once_share_one_value() -> None:
    """Many threads asking for one key at once get one value, built once."""
    builds = _Builds()
    values = PerProcess(builds)
    with ThreadPoolExecutor(max_workers=8) as pool:
        got = list(pool.map(values, ["k"] * 64))
    assert (len({id(value) for value in got}), builds.keys) == (1, ["k"])


def test_a_forked_child_builds_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """A process with another id (a forked child) does not reuse its parent's value."""
    builds = _Builds()
    values = PerProcess(builds)
    parent = values("k")
    child_pid = os.getpid() + 1
    monkeypatch.setattr(per_process.os, "getpid", lambda: child_pid)
    child = values("k")
    assert (child is parent, builds.keys) == (False, ["k", "k"])
