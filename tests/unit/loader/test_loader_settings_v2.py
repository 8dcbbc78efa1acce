"""Specification of the loader with a Snowplow 2.x config: 2.x's command line and defaults."""

from __future__ import annotations

from pathlib import Path

import pytest
from plowline_cloud.config_source import load_pipeline_config
from plowline_core.iglu.key import SchemaCriterion
from plowline_core.schema.entity import ColumnMode
from plowline_core.webhook import WebhookSettings
from plowline_loader.cli import main
from plowline_loader.settings import load_settings

DATA = Path(__file__).resolve().parents[2] / "data" / "v2config"
MINIMAL, FULL = DATA / "minimal.hocon", DATA / "full.hocon"
MISSING = "/nonexistent/resolver.json"
RESOLVER = (
    Path(__file__).resolve().parents[3]
    / "libs/devstack/src/plowline_devstack/examples/resolver.json"
)


def test_2x_command_line_starts_the_loader(capsys: pytest.CaptureFixture[str]) -> None:
    """``--config <2.x> --iglu-config …`` reaches ``run``, which reads the config and the resolver."""
    code = main(["--config", str(FULL), "--iglu-config", MISSING])

    expected = (2, True)
    err = capsys.readouterr().err
    assert expected == (code, f"--resolver {MISSING}: no such file" in err), err


def test_iglu_config_is_the_resolver() -> None:
    """2.x's ``--iglu-config`` sets the resolver."""
    settings = load_settings({"config": str(MINIMAL), "iglu_config": "resolver.json"})

    assert settings.resolver == "resolver.json"


def test_a_2x_config_brings_2x_settings() -> None:
    """Column mode, port, trigger interval, bytes, partitions and the rest come from the file."""
    settings = load_settings({"config": str(FULL), "resolver": "r.json"})

    settings = settings.with_config(load_pipeline_config(FULL))

    expected = (ColumnMode.MAJOR, 9010, 2.0, 4_000_000, 3, 120.0, 2_000_000, 1_048_576, False)
    assert expected == (
        settings.column_mode,
        settings.port,
        settings.trigger_interval,
        settings.max_bytes,
        settings.partitions,
        settings.too_many_columns_delay,
        settings.max_bytes_single_payload,
        settings.max_bytes_in_batch,
        settings.exit_on_missing_iglu_schema,
    )


def test_a_2x_webhook_reaches_the_loader_webhook() -> None:
    """``monitoring.webhook`` (endpoint, heartbeat, tags) sets the loader's webhook flags."""
    settings = load_settings({"config": str(FULL), "resolver": "r.json"})

    settings = settings.with_config(load_pipeline_config(FULL))

    expected = ("https://hooks.acme.internal/loader", 1800.0, {"env": "staging"})
    assert expected == (
        settings.webhook_endpoint,
        settings.webhook_heartbeat,
        settings.webhook_tag_map(),
    )


def test_a_2x_webhook_is_what_the_sender_is_given() -> None:
    """The settings the loader's webhook sender starts with carry the 2.x file's webhook."""
    settings = load_settings({"config": str(FULL), "resolver": "r.json"})

    webhook = settings.with_config(load_pipeline_config(FULL)).webhook()

    expected = WebhookSettings("https://hooks.acme.internal/loader", {"env": "staging"}, 1800.0)
    assert expected == webhook


def test_a_2x_webhook_endpoint_that_is_no_url_stops_the_start_naming_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 2.x file's ``monitoring.webhook.endpoint`` is checked at start as the flag is: exit 2."""
    config = tmp_path / "config.hocon"
    minimal = MINIMAL.read_text().rstrip().removesuffix("}")
    config.write_text(minimal + 'monitoring { webhook { endpoint = "hooks.acme.com" } }\n}\n')
    # Never Google's BigQuery, had the start gone as far as creating the table.
    monkeypatch.setenv("BIGQUERY_EMULATOR_HOST", "127.0.0.1:9")

    code = main(["--config", str(config), "--iglu-config", str(RESOLVER)])

    expected = (2, True)
    err = capsys.readouterr().err
    assert expected == (code, "--webhook-endpoint" in err), err


def test_a_minimal_2x_config_brings_2x_defaults() -> None:
    """Without the keys, 2.x's defaults apply: port 8000, 1 s trigger, missing schemas exit."""
    settings = load_settings({"config": str(MINIMAL), "resolver": "r.json"})

    settings = settings.with_config(load_pipeline_config(MINIMAL))

    expected = (8000, 1.0, 300.0, True)
    assert expected == (
        settings.port,
        settings.trigger_interval,
        settings.too_many_columns_delay,
        settings.exit_on_missing_iglu_schema,
    )


def test_a_flag_or_variable_wins_over_the_2x_config(monkeypatch: pytest.MonkeyPatch) -> None:
    """A value the user set (flag or PLOWLINE_LOADER_*) is kept over the file's."""
    monkeypatch.setenv("PLOWLINE_LOADER_PORT", "9999")
    settings = load_settings({"config": str(FULL), "resolver": "r.json", "column_mode": "full"})

    settings = settings.with_config(load_pipeline_config(FULL))

    assert (settings.port, settings.column_mode) == (9999, ColumnMode.FULL)


def test_a_1x_config_leaves_the_settings_alone() -> None:
    """Only a 2.x config changes the defaults."""
    examples = Path(__file__).resolve().parents[3] / "libs/devstack/src/plowline_devstack/examples"
    settings = load_settings({"config": "c", "resolver": "r.json"})

    assert settings.with_config(load_pipeline_config(examples / "config.hocon")) == settings


def test_2x_column_keys_reach_the_core_options() -> None:
    """legacyColumns and skipSchemas of the file are in the loader's LoaderOptions."""
    pipeline = load_pipeline_config(FULL)
    settings = load_settings({"config": str(FULL), "resolver": "r.json"}).with_config(pipeline)

    options = settings.options(pipeline)

    expected = (
        (SchemaCriterion("com.acme", "old_style", "jsonschema", 2),),
        2,
        False,
    )
    assert expected == (
        options.legacy_columns,
        len(options.skip_schemas),
        options.legacy_column_mode,
    )


def test_a_2x_configs_retries_and_unhealthy_latency_reach_the_loader() -> None:
    """retries.transientErrors.delay, retries.setupErrors.delay, unhealthyLatency (default 5 min)."""
    settings = load_settings({"config": str(FULL), "resolver": "r.json"})

    settings = settings.with_config(load_pipeline_config(FULL))

    expected = (2.0, 10.0, 300.0)
    assert expected == (settings.backoff_initial, settings.setup_backoff, settings.stall_timeout)


def test_a_set_stall_timeout_wins_over_unhealthy_latency() -> None:
    """--stall-timeout given: the 2.x config's unhealthyLatency does not replace it."""
    settings = load_settings({"config": str(FULL), "resolver": "r.json", "stall_timeout": "900"})

    expected = 900.0
    assert expected == settings.with_config(load_pipeline_config(FULL)).stall_timeout
