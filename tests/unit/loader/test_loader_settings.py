"""LoaderSettings: flags over PLOWLINE_LOADER_* variables, bad values named clearly."""

from __future__ import annotations

from pathlib import Path

import pytest
from plowline_core.errors import ConfigError
from plowline_core.webhook import WebhookSettings
from plowline_loader.bootstrap import worker_config
from plowline_loader.settings import load_settings
from plowline_loader.streaming import StreamSettings, backoff_delay

BASE = {"config": "c.json", "resolver": "r.json"}


def test_flags_override_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """A flag value wins over the same setting in the environment."""
    monkeypatch.setenv("PLOWLINE_LOADER_PORT", "9000")

    settings = load_settings({**BASE, "port": "9100"})

    assert settings.port == 9100


def test_environment_overrides_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    """A PLOWLINE_LOADER_ variable replaces the default when no flag is given."""
    monkeypatch.setenv("PLOWLINE_LOADER_PARTITIONS", "4")

    settings = load_settings({**BASE, "partitions": None})

    assert settings.partitions == 4


@pytest.mark.parametrize(
    ("values", "named"),
    [
        pytest.param({"port": "eighty"}, "--port (PLOWLINE_LOADER_PORT)", id="not-a-number"),
        pytest.param({"partitions": "0"}, "--partitions (PLOWLINE_LOADER_PARTITIONS)", id="zero"),
        pytest.param({"column_mode": "minor"}, "--column-mode", id="unknown-mode"),
        pytest.param({"lease_interval": "90"}, "--lease-interval", id="lease-over-deadline"),
        pytest.param({"task_seconds": "16"}, "--task-seconds", id="task-over-half-the-grace"),
        pytest.param(
            {"task_seconds": "40", "grace_period": "60"}, "--task-seconds", id="over-its-grace"
        ),
        pytest.param({"stall_timeout": "5"}, "--stall-timeout", id="stall-within-4-tasks"),
    ],
)
def test_bad_value_is_a_config_error_naming_it(values: dict[str, str], named: str) -> None:
    """A bad setting raises ConfigError whose message names the flag."""
    with pytest.raises(ConfigError) as caught:
        load_settings({**BASE, **values})

    assert named in str(caught.value)


def test_misspelt_setting_is_refused() -> None:
    """A misspelt setting passed in is refused (extra="forbid")."""
    with pytest.raises(ConfigError) as caught:
        load_settings({**BASE, "partitons": "2"})

    assert "--partitons" in str(caught.value)


@pytest.mark.parametrize(
    ("attempt", "delay"),
    [
        pytest.param(1, 0.5, id="first"),
        pytest.param(3, 2.0, id="doubling"),
        pytest.param(10, 30.0, id="capped"),
    ],
)
def test_backoff_doubles_up_to_the_cap(attempt: int, delay: float) -> None:
    """The wait before a retry doubles from 0.5 s and stops at 30 s."""
    assert delay == backoff_delay(attempt, 0.5, 30.0)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        pytest.param("acme=500", "--iglu-not-found: 'acme': '500' is not a status", id="status"),
        pytest.param(
            "nowhere=403", "--iglu-not-found: not-found statuses given for ['nowhere']", id="name"
        ),
    ],
)
def test_a_bad_iglu_not_found_is_a_config_error_naming_the_flag(value: str, message: str) -> None:
    """A malformed --iglu-not-found, or one naming no HTTP repository, stops the loader at start."""
    examples = Path(__file__).resolve().parents[3] / "libs/devstack/src/plowline_devstack/examples"
    settings = load_settings(
        {
            "config": examples / "config.json",
            "resolver": examples / "resolver.json",
            "iglu_not_found": value,
        }
    )
    with pytest.raises(ConfigError) as raised:
        worker_config(settings, "0.1.0")
    assert str(raised.value).startswith(message)


def test_default_micro_batch_spreads_its_fixed_cost_over_10000_messages_a_partition() -> None:
    """By default a partition takes 10,000 typical (1.6 KB) events a micro-batch within its byte budget.

    Each micro-batch costs the JVM ~0.18 CPU-s whatever its size: a backlog
    drains in half as many batches as with 5,000.
    """
    settings = load_settings({**BASE})

    assert settings.max_messages == 10_000
    assert settings.max_bytes >= 10_000 * 1_650


def test_webhook_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """PLOWLINE_LOADER_WEBHOOK_* give the endpoint, the tags and the heartbeat interval."""
    monkeypatch.setenv("PLOWLINE_LOADER_WEBHOOK_ENDPOINT", "https://hooks.acme.com/plowline")
    monkeypatch.setenv("PLOWLINE_LOADER_WEBHOOK_TAGS", "pipeline=prod,team=data")
    monkeypatch.setenv("PLOWLINE_LOADER_WEBHOOK_HEARTBEAT", "600")
    expected = WebhookSettings(
        "https://hooks.acme.com/plowline", {"pipeline": "prod", "team": "data"}, 600.0
    )
    assert expected == load_settings(BASE).webhook()


def test_no_webhook_endpoint_means_no_webhook() -> None:
    """Without an endpoint the loader sends no alerts and no heartbeats."""
    expected = None
    assert expected == load_settings(BASE).webhook()


@pytest.mark.parametrize(
    ("values", "flag"),
    [
        pytest.param(
            {"webhook_endpoint": "hooks.acme.com"}, "--webhook-endpoint", id="endpoint-not-a-url"
        ),
        pytest.param(
            {"webhook_endpoint": "https://hooks.acme.com", "webhook_tags": "prod"},
            "--webhook-tags",
            id="tag-not-name-value",
        ),
        pytest.param({"webhook_tags": "prod"}, "--webhook-tags", id="tag-without-endpoint"),
    ],
)
def test_a_bad_webhook_setting_is_a_config_error_naming_the_flag(
    values: dict[str, str], flag: str
) -> None:
    """A webhook endpoint or tag that cannot be used stops the start, naming its flag."""
    with pytest.raises(ConfigError) as caught:
        load_settings({**BASE, **values})
    expected = True
    assert expected == (flag in str(caught.value))


TABLE_MISSING = "PermanentError: 404 Not found: Table acme:snowplow.events"
THROTTLED = "TransientError: 503 backendError"


@pytest.mark.parametrize(
    ("error", "attempt", "expected"),
    [
        pytest.param(TABLE_MISSING, 1, 10.0, id="setup-error-first-wait"),
        pytest.param(TABLE_MISSING, 3, 40.0, id="setup-error-doubles-past-backoff-max"),
        pytest.param(TABLE_MISSING, 9, 40.0, id="setup-error-capped"),
        pytest.param("PermissionDenied: 403 Access Denied: Table", 1, 10.0, id="no-access"),
        pytest.param(THROTTLED, 1, 2.0, id="transient-first-wait"),
        pytest.param(THROTTLED, 9, 40.0, id="transient-capped"),
    ],
)
def test_a_setup_error_waits_from_its_own_delay(error: str, attempt: int, expected: float) -> None:
    """2.x's retries: a setup error backs off from setupErrors.delay, others from transientErrors."""
    settings = StreamSettings("cp", backoff_initial_s=2.0, backoff_max_s=40.0, setup_backoff_s=10.0)

    assert expected == settings.retry_delay(attempt, error)


def test_without_a_setup_delay_every_error_waits_alike() -> None:
    """A 1.x config (no setupErrors.delay): a setup error backs off like any other."""
    settings = StreamSettings("cp", backoff_initial_s=0.5, backoff_max_s=30.0)

    assert backoff_delay(1, 0.5, 30.0) == settings.retry_delay(1, TABLE_MISSING)
