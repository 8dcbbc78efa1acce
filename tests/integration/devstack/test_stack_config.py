"""The provisioning file and the session fixture's environment."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from plowline_core.errors import ConfigError
from plowline_devstack.provisioning import StackConfig, load_config
from plowline_devstack.stack import LocalStack


def test_stack_config_defaults() -> None:
    """Without a file the config is the documented default."""
    expected = {
        "project": "plowline-local",
        "dataset": "snowplow",
        "table": "events",
        "topics": ("enriched", "types", "bad-rows", "failed-inserts"),
        "subscriptions": {
            "enriched-loader": "enriched",
            "types-mutator": "types",
            "bad-rows-deadletter": "bad-rows",
            "failed-inserts-repeater": "failed-inserts",
        },
        "buckets": ("plowline-dead-end", "plowline-bad-rows"),
    }

    assert expected == load_config(None).to_json()


def test_stack_config_reads_toml(tmp_path: Path) -> None:
    """A TOML file overrides the keys it names and keeps the other defaults."""
    path = tmp_path / "stack.toml"
    path.write_text('dataset = "atomic"\ntopics = ["in"]\n[subscriptions]\nin-sub = "in"\n')

    actual = load_config(path)

    assert StackConfig(dataset="atomic", topics=("in",), subscriptions={"in-sub": "in"}) == actual


@pytest.mark.parametrize(
    "text",
    [
        pytest.param('{"datasets": "x"}', id="unknown-key"),
        pytest.param('{"topics": ["a"], "subscriptions": {"s": "b"}}', id="orphan-subscription"),
        pytest.param("[1, 2]", id="not-an-object"),
        pytest.param("{", id="not-json"),
    ],
)
def test_stack_config_rejects_bad_files(text: str, tmp_path: Path) -> None:
    """A bad provisioning file is a ConfigError naming the problem."""
    path = tmp_path / "stack.json"
    path.write_text(text)

    with pytest.raises(ConfigError):
        load_config(path)


def test_stack_fixture_exports_environment(local_stack: LocalStack) -> None:
    """The session fixture points the Google clients at the stack through the environment."""
    actual = {name: os.environ.get(name) for name in local_stack.env()}

    assert local_stack.env() == actual
