"""Specification of the Snowplow 2.x Pub/Sub config: 2.x's defaults, each warning, each refusal."""

from __future__ import annotations

import copy
import re
import string
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from plowline_core.config import LoadKind, WriteStreamKind
from plowline_core.errors import ConfigError
from plowline_core.iglu.key import SchemaCriterion
from plowline_core.pipeline_config import PipelineConfig
from plowline_core.v2_config import (
    STATSD_NOT_SUPPORTED,
    V2_NAME,
    duration_s,
    is_v2_document,
    parse_v2,
)
from plowline_core.v2_names import V2Names

MINIMAL: dict[str, Any] = {
    "license": {"accept": True},
    "input": {"subscription": "projects/acme-pipes/subscriptions/enriched-good"},
    "output": {
        "good": {"project": "acme-warehouse", "dataset": "atomic"},
        "bad": {"topic": "projects/acme-pipes/topics/enriched-bad"},
    },
}


def _with(path: str, value: Any, base: dict[str, Any] | None = None) -> dict[str, Any]:
    document = copy.deepcopy(MINIMAL if base is None else base)
    node = document
    *parents, last = path.split(".")
    for part in parents:
        node = node.setdefault(part, {})
    node[last] = value
    return document


def test_a_minimal_config_takes_2x_defaults() -> None:
    """A minimal file reads as 2.x reads it: table events, 2.x's batching, retries, port."""
    config = parse_v2(MINIMAL)

    expected = (
        "events",
        10_000_000,
        1.0,
        2,
        300.0,
        True,
        False,
        5_242_880,
        10_000_000,
        8000,
        (),
        (),
    )
    assert expected == (
        config.table,
        config.max_bytes,
        config.max_delay_s,
        config.write_batch_concurrency,
        config.too_many_columns_delay_s,
        config.exit_on_missing_iglu_schema,
        config.legacy_column_mode,
        config.max_bytes_in_batch,
        config.max_bytes_single_payload,
        config.health_port,
        config.skip_schemas,
        config.legacy_columns,
    )


@pytest.mark.parametrize(
    ("path", "value", "attribute", "expected"),
    [
        pytest.param("output.good.table", "web", "table", "web", id="table"),
        pytest.param("batching.maxBytes", 4_000_000, "max_bytes", 4_000_000, id="max-bytes"),
        pytest.param("batching.maxDelay", "250 millis", "max_delay_s", 0.25, id="max-delay"),
        pytest.param(
            "batching.writeBatchConcurrency", 5, "write_batch_concurrency", 5, id="concurrency"
        ),
        pytest.param(
            "retries.tooManyColumns.delay",
            "2 minutes",
            "too_many_columns_delay_s",
            120.0,
            id="too-many-columns",
        ),
        pytest.param(
            "exitOnMissingIgluSchema", False, "exit_on_missing_iglu_schema", False, id="exit"
        ),
        pytest.param("legacyColumnMode", True, "legacy_column_mode", True, id="legacy-mode"),
        pytest.param(
            "decompression.maxBytesInBatch", 1024, "max_bytes_in_batch", 1024, id="in-batch"
        ),
        pytest.param(
            "decompression.maxBytesSinglePayload",
            2048,
            "max_bytes_single_payload",
            2048,
            id="single-payload",
        ),
        pytest.param("monitoring.healthProbe.port", 9010, "health_port", 9010, id="port"),
        pytest.param(
            "monitoring.webhook.endpoint",
            "https://hooks.acme/l",
            "webhook_endpoint",
            "https://hooks.acme/l",
            id="webhook-endpoint",
        ),
        pytest.param(
            "monitoring.webhook.heartbeat", "30.minutes", "webhook_heartbeat_s", 1800.0, id="beat"
        ),
        pytest.param(
            "monitoring.webhook.tags.env",
            "staging",
            "webhook_tags",
            (("env", "staging"),),
            id="tag",
        ),
        pytest.param(
            "skipSchemas",
            ["iglu:com.acme/a/jsonschema/1-*-*"],
            "skip_schemas",
            (SchemaCriterion("com.acme", "a", "jsonschema", 1),),
            id="skip-schemas",
        ),
        pytest.param(
            "legacyColumns",
            ["iglu:com.acme/b/jsonschema/2-0-*"],
            "legacy_columns",
            (SchemaCriterion("com.acme", "b", "jsonschema", 2, 0),),
            id="legacy-columns",
        ),
    ],
)
def test_an_honoured_key_is_read(path: str, value: Any, attribute: str, expected: Any) -> None:
    """Each key plowline honours gives its value, and is named in no warning."""
    config = parse_v2(_with(path, value))

    assert (expected, False) == (
        getattr(config, attribute),
        any(path in entry for entry in config.ignored),
    )


@pytest.mark.parametrize(
    ("path", "value", "reason"),
    [
        pytest.param("license.accept", True, "plowline is open source", id="license"),
        pytest.param("input.maxMessagesPerPull", 10, "--max-messages", id="input-pull"),
        pytest.param("input.parallelPullFactor", 0.5, "pulls per partition", id="input-factor"),
        pytest.param(
            "output.good.credentials", "{}", "GOOGLE_APPLICATION_CREDENTIALS", id="credentials"
        ),
        pytest.param("output.bad.batchSize", 10, "--max-bad-row-bytes", id="bad-batch"),
        pytest.param("cpuParallelism.transformFactor", 0.5, "one task per", id="cpu"),
        pytest.param(
            "retries.transientErrors.attempts", 3, "never given up", id="transient-attempts"
        ),
        pytest.param("retries.alterTableWait.delay", "1 second", "--schema-refresh", id="alter"),
        pytest.param("http.client.maxConnectionsPerServer", 4, "connection pools", id="http"),
        pytest.param("monitoring.metrics.statsd.port", 8125, "Prometheus", id="statsd"),
        pytest.param("monitoring.metrics.prometheus.tags.a", "b", "no extra tags", id="prom"),
        pytest.param("monitoring.sentry.dsn", "https://k@s/1", "not sent to Sentry", id="sentry"),
        pytest.param("monitoring.webhook.retries", 3, "endpoint, tags and heartbeat", id="webhook"),
        pytest.param("telemetry.disable", False, "sends no telemetry", id="telemetry"),
        pytest.param("streams.emulator", "localhost:1", "PUBSUB_EMULATOR_HOST", id="emulator"),
        pytest.param("somethingNew", 1, "not a 2.x key plowline knows", id="unknown-key"),
    ],
)
def test_an_unused_key_is_named_with_its_reason(path: str, value: Any, reason: str) -> None:
    """Each key plowline does not use is named in one entry together with why."""
    config = parse_v2(_with(path, value))

    named = [entry for entry in config.ignored if path in entry.split(" (")[0].split(", ")]
    assert [reason in entry for entry in named] == [True]


def test_statsd_is_named_as_not_supported_with_what_to_scrape_instead() -> None:
    """``monitoring.metrics.statsd`` is ignored with the exported StatsD message (/metrics)."""
    config = parse_v2(_with("monitoring.metrics.statsd.hostname", "statsd.local"))

    named = [entry for entry in config.ignored if "monitoring.metrics.statsd" in entry]
    assert (named, "/metrics" in STATSD_NOT_SUPPORTED) == (
        [f"monitoring.metrics.statsd.hostname ({STATSD_NOT_SUPPORTED})"],
        True,
    )


def test_license_accept_is_not_required() -> None:
    """A config without ``license`` is read (2.x would refuse it; plowline needs no licence)."""
    document = copy.deepcopy(MINIMAL)
    del document["license"]

    assert (parse_v2(document).dataset, parse_v2(document).ignored) == ("atomic", ())


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        pytest.param("input.streamName", "enriched", "input.streamName: a Kinesis", id="kinesis"),
        pytest.param("input.appName", "loader", "input.appName: a Kinesis", id="kinesis-app"),
        pytest.param("input.topicName", "enriched", "input.topicName: a Kafka", id="kafka"),
        pytest.param(
            "input.bootstrapServers", "k:9092", "input.bootstrapServers: a Kafka", id="kafka-srv"
        ),
        pytest.param(
            "output.bad.streamName", "bad", "output.bad.streamName: a Kinesis", id="kinesis-bad"
        ),
        pytest.param("input.subscription", "enriched", "projects/PROJECT/subscriptions", id="sub"),
        pytest.param("output.bad.topic", "bad", "projects/PROJECT/topics/NAME", id="topic"),
        pytest.param("output.good.dataset", None, "output.good.dataset: missing", id="dataset"),
        pytest.param("batching.maxDelay", "soon", "batching.maxDelay: 'soon'", id="duration"),
        pytest.param("batching.maxBytes", -1, "batching.maxBytes: must be", id="max-bytes"),
        pytest.param("skipSchemas", ["com.acme/x"], "skipSchemas: invalid", id="criterion"),
        pytest.param("legacyColumnMode", "maybe", "legacyColumnMode: must be", id="flag"),
        pytest.param("monitoring.healthProbe.port", 70000, "must be a port", id="port"),
    ],
)
def test_a_bad_config_is_refused(path: str, value: Any, message: str) -> None:
    """Kinesis/Kafka, a missing key or a bad value is a ConfigError naming the key."""
    document = _with(path, value)
    if value is None:
        del document["output"]["good"]["dataset"]

    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        parse_v2(document)


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        pytest.param("1 second", 1.0, id="second"),
        pytest.param("100 millis", 0.1, id="millis"),
        pytest.param("60.minutes", 3600.0, id="dotted"),
        pytest.param("5 minutes", 300.0, id="minutes"),
        pytest.param("300 seconds", 300.0, id="seconds"),
        pytest.param("1h", 3600.0, id="short-unit"),
        pytest.param(1500, 1.5, id="bare-number-is-millis"),
    ],
)
def test_durations_read_as_hocon_writes_them(value: Any, seconds: float) -> None:
    """HOCON/Scala durations become seconds."""
    assert seconds == pytest.approx(duration_s(value, "x"))


def test_a_2x_document_is_told_apart_from_1x() -> None:
    """``input`` and ``output`` at the top make a 2.x config; 1.x's ``loader`` does not."""
    assert (
        is_v2_document(MINIMAL),
        is_v2_document({"loader": {}, "input": {}, "output": {}}),
    ) == (True, False)


def test_a_2x_config_loads_with_the_storage_write_api() -> None:
    """2.x writes with the Storage Write API: the pipeline's load mode is its default stream."""
    pipeline = PipelineConfig.from_document(MINIMAL)

    expected = ("2.x", V2_NAME, LoadKind.STORAGE_WRITE_API, WriteStreamKind.DEFAULT)
    load = pipeline.bigquery.load
    assert expected == (pipeline.layout, pipeline.bigquery.name, load.mode, load.stream)


def test_the_pipeline_names_what_2x_names() -> None:
    """The input, the table and the bad topic are the 2.x config's, as full paths."""
    bigquery = PipelineConfig.from_document(MINIMAL).bigquery

    expected = (
        "projects/acme-pipes/subscriptions/enriched-good",
        "acme-warehouse.atomic.events",
        "projects/acme-pipes/topics/enriched-bad",
    )
    assert expected == (bigquery.input, bigquery.table_ref, bigquery.bad_rows)


def test_names_2x_has_no_key_for_are_derived() -> None:
    """Types, failed inserts, bad-rows subscription and buckets get documented defaults."""
    names = PipelineConfig.from_document(_with("output.good.table", "web_events")).v2_names

    stem = "plowline-atomic-web-events"
    expected = V2Names(
        types_topic=f"projects/acme-pipes/topics/{stem}-types",
        types_subscription=f"projects/acme-pipes/subscriptions/{stem}-types",
        failed_inserts_topic=f"projects/acme-pipes/topics/{stem}-failed-inserts",
        failed_inserts_subscription=f"projects/acme-pipes/subscriptions/{stem}-failed-inserts",
        dead_end_bucket="gs://acme-warehouse-plowline-dead-end",
        bad_rows_subscription=f"projects/acme-pipes/subscriptions/{stem}-bad-rows",
        bad_rows_bucket="gs://acme-warehouse-plowline-bad-rows",
    )
    assert expected == names


def test_an_override_replaces_a_derived_name() -> None:
    """An override wins over the derived name and reaches the pipeline's config."""
    pipeline = PipelineConfig.from_document(
        MINIMAL, {"types_topic": "projects/x/topics/t", "dead_end_bucket": "gs://b/p"}
    )

    expected = ("projects/x/topics/t", "gs://b/p")
    assert expected == (pipeline.bigquery.types_topic, pipeline.dead_end_bucket)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        pytest.param({"typo_topic": "t"}, "unknown 2.x name overrides", id="unknown"),
        pytest.param({"bad_rows_bucket": "bucket"}, "PLOWLINE_V2_BAD_ROWS_BUCKET", id="bucket"),
    ],
)
def test_a_bad_override_is_refused(overrides: dict[str, str], message: str) -> None:
    """An override naming no name, or a bucket without gs://, is a ConfigError."""
    with pytest.raises(ConfigError, match=message):
        PipelineConfig.from_document(MINIMAL, overrides)


_PUBSUB_NAME = re.compile(r"^[A-Za-z][-A-Za-z0-9_.~+%]{2,254}$")
_KEY = st.text(alphabet=string.ascii_letters, min_size=1, max_size=8).filter(
    lambda key: key not in {"input", "output", "license", "batching", "retries"}  # 2.x's own
)
_TREE = st.recursive(
    st.one_of(st.integers(), st.booleans(), st.text(max_size=5)),
    lambda children: st.dictionaries(_KEY, children, min_size=1, max_size=4),
    max_leaves=12,
)


@given(extra=st.dictionaries(_KEY, _TREE, max_size=4))
def test_no_key_is_dropped_silently(extra: dict[str, Any]) -> None:
    """Whatever unknown keys a file adds, each is honoured or named in the warning."""
    document = {**extra, **copy.deepcopy(MINIMAL)}

    config = parse_v2(document)

    named = {key for entry in config.ignored for key in entry.rsplit(" (", 1)[0].split(", ")}
    honoured = {"input.subscription", "output.good.project", "output.good.dataset"}
    assert set(_leaves(document)) == named | honoured | {"output.bad.topic"}


@given(
    dataset=st.text(min_size=1, max_size=1024),
    table=st.text(min_size=1, max_size=1024),
)
def test_derived_names_are_valid_pubsub_names(dataset: str, table: str) -> None:
    """Any dataset and table BigQuery allows give valid Pub/Sub names."""
    document = _with("output.good.table", table, _with("output.good.dataset", dataset))

    names = PipelineConfig.from_document(document).v2_names
    assert names is not None

    short = [
        path.rsplit("/", 1)[-1]
        for path in (
            names.types_topic,
            names.types_subscription,
            names.failed_inserts_topic,
            names.failed_inserts_subscription,
            names.bad_rows_subscription,
        )
    ]
    assert all(_PUBSUB_NAME.match(name) for name in short), short


def _leaves(node: Any, prefix: str = "") -> list[str]:
    if isinstance(node, dict) and node:
        return [
            leaf
            for key, child in node.items()
            for leaf in _leaves(child, f"{prefix}.{key}" if prefix else key)
        ]
    return [prefix]


@pytest.mark.parametrize(
    ("path", "value", "attribute", "expected"),
    [
        pytest.param("retries.setupErrors.delay", "10 seconds", "setup_delay_s", 10.0, id="setup"),
        pytest.param(
            "retries.transientErrors.delay", "200 millis", "transient_delay_s", 0.2, id="transient"
        ),
        pytest.param(
            "monitoring.healthProbe.unhealthyLatency",
            "2 minutes",
            "unhealthy_latency_s",
            120.0,
            id="unhealthy-latency",
        ),
    ],
)
def test_retry_delays_and_unhealthy_latency_are_honoured(
    path: str, value: Any, attribute: str, expected: float
) -> None:
    """The retry delays and the unhealthy latency are read, and named in no warning."""
    config = parse_v2(_with(path, value))

    assert (expected, False) == (
        getattr(config, attribute),
        any(path in entry for entry in config.ignored),
    )


def test_retry_delays_and_unhealthy_latency_default_as_in_2x() -> None:
    """Unset, they are 2.x's defaults: 30 s, 1 s and 5 minutes."""
    config = parse_v2(MINIMAL)

    expected = (30.0, 1.0, 300.0)
    assert expected == (config.setup_delay_s, config.transient_delay_s, config.unhealthy_latency_s)
