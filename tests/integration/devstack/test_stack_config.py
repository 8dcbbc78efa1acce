"""The provisioning file and the session fixture's environment."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest
from plowline_cloud.clients import bigquery_client, subscriber_client
from plowline_core.errors import ConfigError
from plowline_devstack.stack.config import load_stack
from plowline_devstack.stack.lifecycle import LocalStack
from plowline_devstack.stack.provisioning import StackConfig, load_config, provision


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
        "table_layout": "1.x",
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


def test_a_snowplow_1x_config_is_provisioned_with_the_helpers_subscriptions(
    local_stack: LocalStack, tmp_path: Path
) -> None:
    """dev up's provisioning of a 1.x HOCON makes its table, topics and every service's subscription."""
    tag = uuid.uuid4().hex[:8]
    path = tmp_path / "bigquery.hocon"
    path.write_text(
        f"""projectId = {local_stack.project}
        loader {{
          input.subscription = in-{tag}
          output {{
            good {{ datasetId = snowplow, tableId = events_{tag} }}
            bad.topic = bad-{tag}
            types.topic = types-{tag}
            failedInserts.topic = failed-{tag}
          }}
        }}
        mutator {{ input.subscription = types-sub-{tag}, output.good = ${{loader.output.good}} }}
        repeater.input.subscription = failed-sub-{tag}
        """
    )
    stack, _ = load_stack(path)

    provision(stack, local_stack.endpoints)

    subscriber = subscriber_client(local_stack.endpoints.pubsub_target)
    names = {
        s.name.rsplit("/", 1)[-1]
        for s in subscriber.list_subscriptions(project=f"projects/{local_stack.project}")
    }
    subscriber.close()
    client = bigquery_client(local_stack.project, local_stack.endpoints.bigquery_url)
    tables = {t.table_id for t in client.list_tables(f"{local_stack.project}.snowplow")}
    client.close()  # type: ignore[no-untyped-call]
    wanted = {f"in-{tag}", f"types-sub-{tag}", f"failed-sub-{tag}", f"bad-{tag}-deadletter"}
    expected = (wanted, True)
    assert expected == (wanted & names, f"events_{tag}" in tables)
