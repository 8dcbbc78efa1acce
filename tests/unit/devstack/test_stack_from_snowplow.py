"""Specification of what ``plowline dev up --config`` provisions from a Snowplow config."""

from __future__ import annotations

from pathlib import Path

from plowline_devstack.stack.config import StackConfig, load_stack

EXAMPLES = Path(__file__).resolve().parents[3] / "libs/devstack/src/plowline_devstack/examples"


def test_the_1x_example_provisions_what_it_names_and_the_helpers_subscriptions() -> None:
    """The HOCON example gives its table, topics and subscriptions, plus repeater and dead-letter ones."""
    expected = StackConfig(
        project="plowline-local",
        dataset="snowplow",
        table="events",
        topics=("enriched", "types", "bad-rows", "failed-inserts"),
        subscriptions={
            "enriched-loader": "enriched",
            "types-mutator": "types",
            "failed-inserts-repeater": "failed-inserts",
            "bad-rows-deadletter": "bad-rows",
        },
        buckets=("plowline-dead-end", "plowline-bad-rows"),
    )

    stack, _ = load_stack(EXAMPLES / "config.hocon")

    assert expected == stack


def test_the_output_names_each_services_subscription() -> None:
    """The lines printed by dev up name the repeater's and dead-letter writer's subscriptions."""
    _, roles = load_stack(EXAMPLES / "config.json")

    expected = (True, True, True)
    text = "\n".join(roles)
    assert expected == (
        "--failedInsertsSub failed-inserts-repeater" in text,
        "--badRowsSub bad-rows-deadletter" in text,
        "Snowplow 0.x config" in text,
    ), text


def test_a_provisioning_file_is_still_a_provisioning_file(tmp_path: Path) -> None:
    """A flat provisioning JSON keeps its meaning and prints no Snowplow roles."""
    path = tmp_path / "stack.json"
    path.write_text('{"dataset": "atomic"}')

    expected = (StackConfig(dataset="atomic"), [])
    assert expected == load_stack(path)
