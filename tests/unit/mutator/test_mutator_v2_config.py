"""Specification of the mutator with a 2.x config: its column mode and types subscription."""

from __future__ import annotations

from pathlib import Path

from plowline_cloud.config_source import load_pipeline_config
from plowline_core.schema.entity import ColumnMode
from plowline_mutator.bootstrap import load_table_config
from plowline_mutator.settings import MutatorSettings

MINIMAL = Path(__file__).resolve().parents[2] / "data" / "v2config" / "minimal.hocon"


def test_a_2x_config_selects_major_columns() -> None:
    """Unless a column mode is set, a 2.x config means 2.x's columns."""
    settings = MutatorSettings(config=str(MINIMAL)).with_config(load_pipeline_config(MINIMAL))

    assert settings.column_mode == ColumnMode.MAJOR


def test_a_set_column_mode_is_kept() -> None:
    """--column-mode full stays full with a 2.x config."""
    settings = MutatorSettings(config=str(MINIMAL), column_mode=ColumnMode.FULL)

    assert settings.with_config(load_pipeline_config(MINIMAL)).column_mode == ColumnMode.FULL


def test_iglu_config_is_the_resolver() -> None:
    """2.x's --iglu-config sets the resolver."""
    assert MutatorSettings(iglu_config="resolver.json").resolver == "resolver.json"


def test_types_subscription_overrides_the_derived_one() -> None:
    """--types-subscription names the subscription the mutator listens on."""
    table = load_table_config(str(MINIMAL), "projects/acme-pipes/subscriptions/mine")

    assert table.types_subscription == "projects/acme-pipes/subscriptions/mine"


def test_a_2x_configs_webhook_receives_the_mutators_alerts() -> None:
    """monitoring.webhook's endpoint and tags become the mutator's alert webhook."""
    full = MINIMAL.with_name("full.hocon")
    settings = MutatorSettings(config=str(full)).with_config(load_pipeline_config(full))

    webhook = settings.webhook()

    assert webhook is not None
    expected = ("https://hooks.acme.internal/loader", {"env": "staging"})
    assert expected == (webhook.endpoint, dict(webhook.tags))


def test_a_set_webhook_endpoint_is_kept() -> None:
    """PLOWLINE_MUTATOR_WEBHOOK_ENDPOINT wins over the 2.x config's endpoint."""
    full = MINIMAL.with_name("full.hocon")
    settings = MutatorSettings(config=str(full), webhook_endpoint="http://127.0.0.1:9/")

    webhook = settings.with_config(load_pipeline_config(full)).webhook()

    assert webhook is not None
    expected = "http://127.0.0.1:9/"
    assert expected == webhook.endpoint
