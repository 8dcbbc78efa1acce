"""Specification of ``plowline dev up --config <2.x config>``: what the four services will use."""

from __future__ import annotations

from pathlib import Path

import pytest
from plowline_core.errors import ConfigError
from plowline_devstack.stack_config import StackConfig, load_stack

MINIMAL = Path(__file__).resolve().parents[2] / "data" / "v2config" / "minimal.hocon"
STEM = "plowline-atomic-events"


def test_a_2x_config_provisions_every_topic_the_services_use() -> None:
    """Enriched, the bad topic, and the derived types and failed-inserts topics."""
    stack, _ = load_stack(MINIMAL)

    expected = ("enriched", f"{STEM}-types", "enriched-bad", f"{STEM}-failed-inserts")
    assert expected == stack.topics


def test_a_2x_config_provisions_every_subscription_the_services_read() -> None:
    """The loader's input, the mutator's, the repeater's and the dead-letter writer's."""
    stack, _ = load_stack(MINIMAL)

    expected = {
        "enriched-good": "enriched",
        f"{STEM}-types": f"{STEM}-types",
        f"{STEM}-failed-inserts": f"{STEM}-failed-inserts",
        f"{STEM}-bad-rows": "enriched-bad",
    }
    assert expected == dict(stack.subscriptions)


def test_a_2x_config_provisions_the_buckets_and_2x_table() -> None:
    """The derived dead-end and bad-rows buckets, and the table in 2.x's layout."""
    stack, _ = load_stack(MINIMAL)

    expected = (
        ("acme-warehouse-plowline-dead-end", "acme-warehouse-plowline-bad-rows"),
        "2.x",
        "acme-warehouse.atomic.events",
    )
    assert expected == (
        stack.buckets,
        stack.table_layout,
        f"{stack.project}.{stack.dataset}.{stack.table}",
    )


def test_a_variable_renames_what_is_provisioned(monkeypatch: pytest.MonkeyPatch) -> None:
    """PLOWLINE_V2_BAD_ROWS_SUBSCRIPTION is provisioned under its name, as the writer reads it."""
    monkeypatch.setenv("PLOWLINE_V2_BAD_ROWS_SUBSCRIPTION", "projects/acme-pipes/subscriptions/b")

    stack, _ = load_stack(MINIMAL)

    assert stack.subscriptions["b"] == "enriched-bad"


def test_an_unknown_table_layout_is_refused() -> None:
    """A provisioning file's table_layout is 1.x or 2.x."""
    with pytest.raises(ConfigError, match="table_layout"):
        StackConfig.from_json({"table_layout": "3.x"})
