"""The repeater's start-up against Google endpoints that accept connections and never answer.

Found by a chaos run: a repeater SIGKILLed and restarted in exactly-once mode was not ready
240 s later and had logged nothing, its start-up waiting without a deadline on the
ledger's check (``tables.insert`` with no request timeout) while the BigQuery stand-in
did not answer. The property: the first log line comes before any network call, and a
start-up either reaches ``repeater started`` or exits 1 naming the call it waited on.

Here the repeater runs as a process against ``silent_endpoint`` (``support.endpoints``);
the ledger's check alone, in this process, is tested in
``tests/integration/repeater/test_repeater_startup.py``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.configs import bigquery_config, resolver_config
from support.timing import wait_for_line

_STARTUP_TIMEOUT_S = 3.0
_FIRST_LINE_S = 20.0  # the interpreter and the Google clients' imports, on a loaded machine
_EXACTLY_ONCE = {"mode": "STORAGE_WRITE_API", "stream": "exactly-once"}


def _start_repeater(start_service: Callable[..., Any], tmp_path: Path, load: dict[str, Any]) -> Any:
    config, resolver = tmp_path / "config.json", tmp_path / "resolver.json"
    config.write_text(json.dumps(bigquery_config(name="startup", load=load)))
    resolver.write_text(json.dumps(resolver_config()))
    return start_service(
        "plowline_repeater.cli",
        "run",
        "--config",
        str(config),
        "--resolver",
        str(resolver),
        "--failedInsertsSub",
        "failed-inserts-startup",
        "--deadEndBucket",
        "gs://plowline-dead-end/startup",
        "--port",
        "0",
    )


@pytest.fixture
def silent_google(silent_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Point every Google client of a started service at the silent endpoint; short start-up."""
    for name, value in {
        "PUBSUB_EMULATOR_HOST": silent_endpoint,
        "BIGQUERY_EMULATOR_HOST": f"http://{silent_endpoint}",
        "BIGQUERY_EMULATOR_GRPC_HOST": silent_endpoint,
        "STORAGE_EMULATOR_HOST": f"http://{silent_endpoint}",
        "PLOWLINE_REPEATER_STARTUP_TIMEOUT": str(_STARTUP_TIMEOUT_S),  # --startupTimeout
    }.items():
        monkeypatch.setenv(name, value)
    return silent_endpoint


def _exit_code(service: Any, timeout: float) -> int | None:
    try:
        return int(service.process.wait(timeout))
    except Exception:  # still running: the start-up waits without a deadline
        return None


def test_a_repeater_whose_ledger_check_goes_unanswered_says_so_and_exits(
    silent_google: str,
    start_service: Callable[..., Any],
    tmp_path: Path,
) -> None:
    """Exactly-once, BigQuery silent: the repeater logs its start, then exits 1 naming the ledger."""
    service = _start_repeater(start_service, tmp_path, _EXACTLY_ONCE)
    first = wait_for_line(service.log, "repeater starting", _FIRST_LINE_S)
    code = _exit_code(service, _STARTUP_TIMEOUT_S * 2 + 15.0)
    tail = service.tail()
    expected = (True, 1, True, True)
    actual = (first, code, "repeater did not start" in tail, "create ledger events_ledger" in tail)
    assert expected == actual, tail


@pytest.mark.parametrize(
    "load",
    [
        pytest.param({"mode": "STREAMING_INSERTS", "retry": False}, id="insert-all"),
        pytest.param({"mode": "STORAGE_WRITE_API", "stream": "default"}, id="write-api-default"),
        pytest.param({"mode": "FILE_LOADS", "frequency": 100}, id="file-loads"),
    ],
)
def test_a_repeater_makes_no_call_before_it_says_it_started(
    load: dict[str, Any],
    silent_google: str,
    start_service: Callable[..., Any],
    tmp_path: Path,
) -> None:
    """With every Google endpoint silent, the other write modes still reach "repeater started"."""
    service = _start_repeater(start_service, tmp_path, load)
    started = wait_for_line(service.log, "repeater started", _FIRST_LINE_S)
    assert started, service.tail()
