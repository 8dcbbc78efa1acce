"""Specification of the repeater with a 2.x config: its subscription, bucket and --iglu-config."""

from __future__ import annotations

from pathlib import Path

from plowline_repeater.bootstrap import load_config
from plowline_repeater.settings import RepeaterSettings

MINIMAL = Path(__file__).resolve().parents[2] / "data" / "v2config" / "minimal.hocon"


def test_a_2x_config_derives_the_subscription_and_dead_end_bucket() -> None:
    """The repeater reads the derived failed-inserts subscription and writes the dead-end bucket."""
    pipeline = load_config(str(MINIMAL))

    expected = (
        "projects/acme-pipes/subscriptions/plowline-atomic-events-failed-inserts",
        "gs://acme-warehouse-plowline-dead-end",
    )
    assert expected == (pipeline.failed_inserts_subscription, pipeline.dead_end_bucket)


def test_iglu_config_is_the_resolver() -> None:
    """2.x's --iglu-config sets the resolver."""
    settings = RepeaterSettings(config=str(MINIMAL), iglu_config="resolver.json")

    assert settings.resolver == "resolver.json"
