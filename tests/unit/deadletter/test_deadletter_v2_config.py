"""Specification of the dead-letter writer's subscription and bucket with a 2.x config."""

from __future__ import annotations

from pathlib import Path

import pytest
from plowline_core.errors import ConfigError
from plowline_deadletter.bootstrap import resolve
from plowline_deadletter.settings import DeadLetterSettings

DATA = Path(__file__).resolve().parents[2] / "data" / "v2config"
EXAMPLES = Path(__file__).resolve().parents[3] / "libs/devstack/src/plowline_devstack/examples"


def test_a_2x_config_derives_the_subscription_and_bucket() -> None:
    """With a 2.x config neither --badRowsSub nor --bucket is needed."""
    _, subscription, bucket = resolve(DeadLetterSettings(config=str(DATA / "minimal.hocon")))

    expected = (
        "projects/acme-pipes/subscriptions/plowline-atomic-events-bad-rows",
        "gs://acme-warehouse-plowline-bad-rows",
    )
    assert expected == (subscription, bucket)


def test_the_flags_win_over_the_derived_names() -> None:
    """--badRowsSub and --bucket replace a 2.x config's derived names."""
    settings = DeadLetterSettings(
        config=str(DATA / "minimal.hocon"), bad_rows_sub="mine", bucket="gs://mine"
    )

    assert resolve(settings)[1:] == ("mine", "gs://mine")


def test_a_1x_config_still_needs_both() -> None:
    """A 0.x/1.x config names neither: the writer says which flags to give."""
    with pytest.raises(ConfigError, match="--badRowsSub and --bucket are required"):
        resolve(DeadLetterSettings(config=str(EXAMPLES / "config.hocon")))
