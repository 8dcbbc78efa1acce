"""Specification of ``plowline dev up --config <2.x config>``: what the four services will use."""

from __future__ import annotations

from pathlib import Path

import pytest
from plowline_core.errors import ConfigError
from plowline_devstack.stack.config import StackConfig, load_stack

MINIMAL = Path(__file__).resolve().parents[2] / "data" / "v2config" / "minimal.hocon"
STEM = "plowline-atomic-events"


@pytest.fixture
def one_project(tmp_path: Path) -> Path:
    """The minimal 2.x config with its table in the Pub/Sub project (the local stack has one)."""
    path = tmp_path / "config.hocon"
    path.write_text(MINIMAL.read_text().replace("acme-warehouse", "acme-pipes"))
    return path


def test_a_2x_config_provisions_every_topic_the_services_use(one_project: Path) -> None:
    """Enriched, the bad topic, and the derived types and failed-inserts topics."""
    stack, _ = load_stack(one_project)

    expected = ("enriched", f"{STEM}-types", "enriched-bad", f"{STEM}-failed-inserts")
    assert expected == stack.topics


def test_a_2x_config_provisions_every_subscription_the_services_read(one_project: Path) -> None:
    """The loader's input, the mutator's, the repeater's and the dead-letter writer's."""
    stack, _ = load_stack(one_project)

    expected = {
        "enriched-good": "enriched",
        f"{STEM}-types": f"{STEM}-types",
        f"{STEM}-failed-inserts": f"{STEM}-failed-inserts",
        f"{STEM}-bad-rows": "enriched-bad",
    }
    assert expected == dict(stack.subscriptions)


def test_a_2x_config_provisions_the_buckets_and_2x_table(one_project: Path) -> None:
    """The derived dead-end and bad-rows buckets, and the table in 2.x's layout."""
    stack, _ = load_stack(one_project)

    expected = (
        ("acme-pipes-plowline-dead-end", "acme-pipes-plowline-bad-rows"),
        "2.x",
        "acme-pipes.atomic.events",
    )
    assert expected == (
        stack.buckets,
        stack.table_layout,
        f"{stack.project}.{stack.dataset}.{stack.table}",
    )


def test_a_variable_renames_what_is_provisioned(
    monkeypatch: pytest.MonkeyPatch, one_project: Path
) -> None:
    """PLOWLINE_V2_BAD_ROWS_SUBSCRIPTION is provisioned under its name, as the writer reads it."""
    monkeypatch.setenv("PLOWLINE_V2_BAD_ROWS_SUBSCRIPTION", "projects/acme-pipes/subscriptions/b")

    stack, _ = load_stack(one_project)

    assert stack.subscriptions["b"] == "enriched-bad"


def test_an_unknown_table_layout_is_refused() -> None:
    """A provisioning file's table_layout is 1.x or 2.x."""
    with pytest.raises(ConfigError, match="table_layout"):
        StackConfig.from_json({"table_layout": "3.x"})


def test_two_projects_are_refused() -> None:
    """The table in one project and Pub/Sub in another cannot be one local stack: said so."""
    with pytest.raises(ConfigError, match="the local stack has one project"):
        load_stack(MINIMAL)
