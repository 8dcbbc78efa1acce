"""Specification of PipelineConfig.from_document: Snowplow 0.x and 1.x configs mapped onto plowline's."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import pytest
from plowline_core.config import BigQueryConfig, LoadKind, LoadMode
from plowline_core.errors import ConfigError
from plowline_core.pipeline_config import V1_NAME, PipelineConfig
from support.configs import bigquery_config

V0: dict[str, Any] = bigquery_config(
    name="Alpha BigQuery test",
    project="com-acme",
    input="enriched-sub",
    types_topic="types-topic",
    types_subscription="types-sub",
    bad_rows="bad-topic",
    failed_inserts="failed-inserts-topic",
)
GOOD = {"type": "BigQuery", "datasetId": "snowplow", "tableId": "events"}
# A 1.x tree as pyhocon hands it over: ${loader.output.good} already substituted.
V1: dict[str, Any] = {
    "projectId": "com-acme",
    "loader": {
        "input": {"type": "PubSub", "subscription": "enriched-sub"},
        "output": {
            "good": dict(GOOD),
            "bad": {"type": "PubSub", "topic": "bad-topic"},
            "types": {"type": "PubSub", "topic": "types-topic"},
            "failedInserts": {"type": "PubSub", "topic": "failed-inserts-topic"},
        },
        "consumerSettings": {"maxQueueSize": 3000},
        "terminationTimeout": "1 minute",
    },
    "mutator": {
        "input": {"type": "PubSub", "subscription": "types-sub"},
        "output": {"good": dict(GOOD)},
    },
    "repeater": {
        "input": {"type": "PubSub", "subscription": "failed-inserts-sub"},
        "output": {
            "good": dict(GOOD),
            "deadLetters": {"type": "Gcs", "bucket": "gs://dead-letter-bucket"},
        },
    },
    "monitoring": {"sentry": {"dsn": "http://sentry.acme.com"}},
}


def _v1(**changes: Any) -> dict[str, Any]:
    """Return a copy of V1 with dotted paths set (None deletes the key)."""
    tree = copy.deepcopy(V1)
    for path, value in changes.items():
        *parents, last = path.split("__")
        node = tree
        for part in parents:
            node = node[part]
        if value is None:
            del node[last]
        else:
            node[last] = value
    return tree


def test_a_0x_config_is_the_same_for_every_service() -> None:
    """A 0.x bigquery_config gives one table to loader, mutator and repeater, and no unmapped keys."""
    bigquery = BigQueryConfig.parse(V0)
    expected = PipelineConfig(bigquery, bigquery, bigquery, layout="0.x")

    assert expected == PipelineConfig.from_document(V0)


def test_a_1x_config_maps_onto_the_0x_fields() -> None:
    """The 1.x names land on the fields 0.x had, with streaming inserts as the load mode."""
    expected = replace(
        BigQueryConfig.parse(V0),
        name=V1_NAME,
        id="",
        load=LoadMode(LoadKind.STREAMING_INSERTS, retry=False),
    )

    actual = PipelineConfig.from_document(V1)

    assert (expected, expected, expected) == (actual.bigquery, actual.mutator, actual.repeater)


def test_a_1x_config_names_the_repeaters_subscription_and_bucket() -> None:
    """repeater.input.subscription and repeater.output.deadLetters.bucket are kept for the repeater."""
    actual = PipelineConfig.from_document(V1)

    expected = ("failed-inserts-sub", "gs://dead-letter-bucket", "1.x")
    assert expected == (actual.failed_inserts_subscription, actual.dead_end_bucket, actual.layout)


def test_keys_plowline_does_not_use_are_listed_not_dropped() -> None:
    """Every leaf plowline does not read is returned by its dotted path, in document order."""
    expected = (
        "loader.consumerSettings.maxQueueSize",
        "loader.terminationTimeout",
        "monitoring.sentry.dsn",
    )

    assert expected == PipelineConfig.from_document(V1).unmapped


def test_the_mutator_and_repeater_may_name_their_own_table() -> None:
    """mutator.output.good and repeater.output.good pick those apps' tables."""
    tree = _v1(
        mutator__output={"good": {"datasetId": "other", "tableId": "mutated"}},
        repeater__output={"good": {"datasetId": "third", "tableId": "repeated"}},
    )

    actual = PipelineConfig.from_document(tree)

    expected = ("snowplow.events", "other.mutated", "third.repeated")
    assert expected == tuple(
        f"{c.dataset_id}.{c.table_id}" for c in (actual.bigquery, actual.mutator, actual.repeater)
    )


def test_the_repeater_keys_are_optional() -> None:
    """Without repeater.*, the repeater falls back to its flags (None here) and the loader's table."""
    actual = PipelineConfig.from_document(_v1(repeater=None))

    expected = (None, None, actual.bigquery)
    assert expected == (actual.failed_inserts_subscription, actual.dead_end_bucket, actual.repeater)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        pytest.param({"projectId": None}, "projectId: missing", id="no-project"),
        pytest.param({"loader__input": {}}, "loader.input.subscription: missing", id="no-input"),
        pytest.param(
            {"loader__output__bad": None}, "loader.output.bad.topic: missing", id="no-bad"
        ),
        pytest.param({"mutator": None}, "mutator.input.subscription: missing", id="no-mutator"),
        pytest.param(
            {"projectId": 42}, "projectId: must be a non-empty string, got 42", id="not-text"
        ),
        pytest.param(
            {"loader__input": {"type": "Kinesis", "subscription": "s"}},
            "loader.input.type: 'Kinesis' is not supported",
            id="kinesis",
        ),
    ],
)
def test_a_bad_1x_config_names_the_key(changes: dict[str, Any], message: str) -> None:
    """A missing, mistyped or unsupported 1.x key is a ConfigError naming its dotted path."""
    with pytest.raises(ConfigError) as caught:
        PipelineConfig.from_document(_v1(**changes))

    assert message in str(caught.value)


def test_a_document_of_neither_layout_is_refused_with_both_named() -> None:
    """A document with neither 0.x nor 1.x keys is a ConfigError describing both layouts."""
    with pytest.raises(ConfigError) as caught:
        PipelineConfig.from_document({"datasetId": "x"})

    assert "neither a Snowplow 0.x bigquery_config" in str(caught.value)
