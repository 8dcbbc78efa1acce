"""A Snowplow BigQuery Loader 2.x Pub/Sub config, as plowline reads it.

2.x has one HOCON file for its one app: ``input.subscription``, ``output.good.{project,
dataset,table}``, ``output.bad.topic`` and the settings of ``batching``, ``retries``,
``monitoring`` … Missing keys take 2.x's own defaults (``_DEFAULTS``, the values of 2.x's
``reference.conf``), so a minimal file reads as 2.x reads it. ``license.accept`` is not
required.

Every key the user wrote is either honoured (``_HONOURED``) or named, with the reason, in
``V2Config.ignored``: the caller puts them all in one warning. ``telemetry`` is named and
nothing is sent. A Kinesis or Kafka input or output is refused (``ConfigError``).

Notes:
    Pure: takes the parsed document (HOCON substitutions already resolved), reads no file
    and no environment. Durations are HOCON/Scala strings (``"1 second"``, ``"100 millis"``,
    ``"60.minutes"``) and become seconds. Names 2.x has no key for (the types topic …) are
    derived in ``plowline_core.v2_names``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from plowline_core.errors import ConfigError
from plowline_core.iglu.key import SchemaCriterion

V2_NAME = "Snowplow BigQuery Loader 2.x HOCON config"
STATSD_NOT_SUPPORTED = (
    "StatsD is not supported: every service serves Prometheus metrics on /metrics instead; "
    "scrape those"
)
"""Why a 2.x config's ``monitoring.metrics.statsd`` is not used (its entry in ``ignored``)."""

_DEFAULTS: dict[str, Any] = {
    "output": {"good": {"table": "events"}},
    "batching": {"maxBytes": 10_000_000, "maxDelay": "1 second", "writeBatchConcurrency": 2},
    "retries": {
        "setupErrors": {"delay": "30 seconds"},
        "transientErrors": {"delay": "1 second", "attempts": 5},
        "alterTableWait": {"delay": "1 second"},
        "tooManyColumns": {"delay": "300 seconds"},
    },
    "skipSchemas": [],
    "legacyColumns": [],
    "legacyColumnMode": False,
    "exitOnMissingIgluSchema": True,
    "decompression": {"maxBytesInBatch": 5_242_880, "maxBytesSinglePayload": 10_000_000},
    "monitoring": {
        "healthProbe": {"port": 8000, "unhealthyLatency": "5 minutes"},
        "webhook": {"tags": {}, "heartbeat": "5 minutes"},
    },
}

# The keys plowline reads; every other key the user wrote is named in ``ignored``.
_HONOURED = frozenset(
    {
        "input.subscription",
        "output.good.project",
        "output.good.dataset",
        "output.good.table",
        "output.bad.topic",
        "batching.maxBytes",
        "batching.maxDelay",
        "batching.writeBatchConcurrency",
        "retries.tooManyColumns.delay",
        "retries.setupErrors.delay",
        "retries.transientErrors.delay",
        "skipSchemas",
        "legacyColumns",
        "legacyColumnMode",
        "exitOnMissingIgluSchema",
        "decompression.maxBytesInBatch",
        "decompression.maxBytesSinglePayload",
        "monitoring.healthProbe.port",
        "monitoring.healthProbe.unhealthyLatency",
        "monitoring.webhook.endpoint",
        "monitoring.webhook.heartbeat",
    }
)
_HONOURED_PREFIXES = ("monitoring.webhook.tags.",)

# Why a key is not used: the longest matching prefix of the key's path wins.
_REASONS: dict[str, str] = {
    "license": "not needed: plowline is open source",
    "input": "the Spark source pulls per partition: see --max-messages, --ack-deadline",
    "output.good.credentials": "Google clients use application default credentials: "
    "set GOOGLE_APPLICATION_CREDENTIALS",
    "output.bad": "bad rows are published in whole batches, each at most --max-bad-row-bytes",
    "cpuParallelism": "Spark runs one task per partition: batching.writeBatchConcurrency",
    "retries.setupErrors": "setup errors are retried until they are fixed",
    "retries.transientErrors.attempts": "a batch held back by a transient error is retried "
    "until it goes through, never given up after a number of attempts: the loader stays up "
    "and unready, and /healthz fails after monitoring.healthProbe.unhealthyLatency",
    "retries.transientErrors": "transient errors are retried with --backoff-max",
    "retries.alterTableWait": "the loader re-reads the table schema every --schema-refresh s",
    "http": "plowline's HTTP clients keep their own connection pools",
    "monitoring.metrics.statsd": STATSD_NOT_SUPPORTED,
    "monitoring.metrics.prometheus": "metrics on /metrics carry no extra tags",
    "monitoring.sentry": "errors are logged, not sent to Sentry",
    "monitoring.webhook": "the webhook takes endpoint, tags and heartbeat",
    "telemetry": "plowline sends no telemetry",
    "streams": "emulators are set by PUBSUB_EMULATOR_HOST and friends",
}
_OTHER_INPUTS = {
    "streamName": "Kinesis",
    "appName": "Kinesis",
    "topicName": "Kafka",
    "bootstrapServers": "Kafka",
}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*\.?\s*([a-zA-Z]+)\s*$")
_UNITS = {
    **dict.fromkeys(("ns", "nano", "nanos", "nanosecond", "nanoseconds"), 1e-9),
    **dict.fromkeys(("us", "micro", "micros", "microsecond", "microseconds"), 1e-6),
    **dict.fromkeys(("ms", "milli", "millis", "millisecond", "milliseconds"), 1e-3),
    **dict.fromkeys(("s", "second", "seconds"), 1.0),
    **dict.fromkeys(("m", "min", "mins", "minute", "minutes"), 60.0),
    **dict.fromkeys(("h", "hour", "hours"), 3600.0),
    **dict.fromkeys(("d", "day", "days"), 86400.0),
}


@dataclass(frozen=True, slots=True)
class V2Config:
    """What plowline takes from a 2.x config (2.x's defaults where the file is silent).

    Attributes:
        subscription: ``input.subscription`` (``projects/P/subscriptions/S``).
        project, dataset, table: ``output.good.*`` (table ``events`` by default).
        bad_topic: ``output.bad.topic`` (``projects/P/topics/T``).
        max_bytes: ``batching.maxBytes``; ``max_delay_s``: ``batching.maxDelay``.
        write_batch_concurrency: ``batching.writeBatchConcurrency``.
        too_many_columns_delay_s: ``retries.tooManyColumns.delay``.
        setup_delay_s, transient_delay_s: ``retries.setupErrors.delay`` and
            ``retries.transientErrors.delay`` (the first waits of their backoffs).
        unhealthy_latency_s: ``monitoring.healthProbe.unhealthyLatency``.
        skip_schemas, legacy_columns, legacy_column_mode, exit_on_missing_iglu_schema:
            the 2.x keys of the same names.
        max_bytes_in_batch, max_bytes_single_payload: ``decompression.*``.
        health_port: ``monitoring.healthProbe.port`` (the loader's port).
        ignored: ``path, path … (reason)``, one entry per reason, naming every key the
            user wrote that plowline does not use.
    """

    subscription: str
    project: str
    dataset: str
    table: str
    bad_topic: str
    max_bytes: int
    max_delay_s: float
    write_batch_concurrency: int
    too_many_columns_delay_s: float
    skip_schemas: tuple[SchemaCriterion, ...]
    legacy_columns: tuple[SchemaCriterion, ...]
    legacy_column_mode: bool
    exit_on_missing_iglu_schema: bool
    max_bytes_in_batch: int
    max_bytes_single_payload: int
    health_port: int
    webhook_endpoint: str | None = None
    webhook_tags: tuple[tuple[str, str], ...] = ()
    webhook_heartbeat_s: float = 300.0
    setup_delay_s: float = 30.0
    transient_delay_s: float = 1.0
    unhealthy_latency_s: float = 300.0
    ignored: tuple[str, ...] = ()

    @property
    def pubsub_project(self) -> str:
        """The project of the input subscription (where derived topics are made)."""
        return self.subscription.split("/")[1]

    @property
    def table_ref(self) -> str:
        """Return ``project.dataset.table``."""
        return f"{self.project}.{self.dataset}.{self.table}"


def is_v2_document(document: Mapping[str, Any]) -> bool:
    """Return True when ``document`` has 2.x's shape (``input`` and ``output`` at the top)."""
    return "input" in document and "output" in document and "loader" not in document


def parse_v2(document: Mapping[str, Any]) -> V2Config:
    """Return the 2.x config of ``document``.

    Raises:
        ConfigError: a Kinesis/Kafka stream, a missing key or a bad value (the message
            names the dotted path).
    """
    _refuse_other_streams(document)
    tree = _merged(_DEFAULTS, document)
    by_reason: dict[str, list[str]] = {}
    for path in leaf_paths(document):
        if path not in _HONOURED and not path.startswith(_HONOURED_PREFIXES):
            by_reason.setdefault(_reason(path), []).append(path)
    ignored = tuple(f"{', '.join(paths)} ({reason})" for reason, paths in by_reason.items())
    return V2Config(
        subscription=_resource(tree, "input.subscription", "subscriptions"),
        project=_text(tree, "output.good.project"),
        dataset=_text(tree, "output.good.dataset"),
        table=_text(tree, "output.good.table"),
        bad_topic=_resource(tree, "output.bad.topic", "topics"),
        max_bytes=_positive_int(tree, "batching.maxBytes"),
        max_delay_s=duration_s(_get(tree, "batching.maxDelay"), "batching.maxDelay"),
        write_batch_concurrency=_positive_int(tree, "batching.writeBatchConcurrency"),
        too_many_columns_delay_s=_delay(tree, "retries.tooManyColumns.delay"),
        setup_delay_s=_delay(tree, "retries.setupErrors.delay"),
        transient_delay_s=_delay(tree, "retries.transientErrors.delay"),
        unhealthy_latency_s=_delay(tree, "monitoring.healthProbe.unhealthyLatency"),
        skip_schemas=_criteria(tree, "skipSchemas"),
        legacy_columns=_criteria(tree, "legacyColumns"),
        legacy_column_mode=_flag(tree, "legacyColumnMode"),
        exit_on_missing_iglu_schema=_flag(tree, "exitOnMissingIgluSchema"),
        max_bytes_in_batch=_positive_int(tree, "decompression.maxBytesInBatch"),
        max_bytes_single_payload=_positive_int(tree, "decompression.maxBytesSinglePayload"),
        health_port=_port(tree, "monitoring.healthProbe.port"),
        webhook_endpoint=_optional_text(tree, "monitoring.webhook.endpoint"),
        webhook_tags=_tags(tree, "monitoring.webhook.tags"),
        webhook_heartbeat_s=_delay(tree, "monitoring.webhook.heartbeat"),
        ignored=ignored,
    )


def duration_s(value: Any, path: str) -> float:
    """Return the seconds of a HOCON duration (``"1 second"``, ``"60.minutes"``, ``500``: ms).

    Raises:
        ConfigError: naming ``path`` when the value is not a duration.
    """
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return float(value) / 1000.0  # HOCON: a bare number of a duration is milliseconds
    match = _DURATION.match(value) if isinstance(value, str) else None
    if match is None or match[2].lower() not in _UNITS:
        raise ConfigError(f"{path}: {value!r} is not a duration (e.g. '1 second', '100 millis')")
    return float(match[1]) * _UNITS[match[2].lower()]


def _refuse_other_streams(document: Mapping[str, Any]) -> None:
    for side in ("input", "output.bad"):
        node = _get(document, side)
        if not isinstance(node, Mapping):
            continue
        for key, kind in _OTHER_INPUTS.items():
            if key in node:
                raise ConfigError(
                    f"{side}.{key}: a {kind} stream is not supported: plowline reads and "
                    "writes Google Pub/Sub (input.subscription, output.bad.topic)"
                )


def _reason(path: str) -> str:
    parts = path.split(".")
    for end in range(len(parts), 0, -1):
        reason = _REASONS.get(".".join(parts[:end]))
        if reason is not None:
            return reason
    return "not a 2.x key plowline knows"


def _merged(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        below = merged.get(key)
        if isinstance(below, Mapping) and isinstance(value, Mapping):
            merged[key] = _merged(below, value)
        else:
            merged[key] = value
    return merged


def _get(tree: Any, path: str) -> Any:
    node = tree
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def _text(tree: Mapping[str, Any], path: str) -> str:
    value = _get(tree, path)
    if value is None:
        raise ConfigError(f"{path}: missing (required by the Snowplow 2.x config)")
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{path}: must be a non-empty string, got {value!r}")
    return value


def _resource(tree: Mapping[str, Any], path: str, kind: str) -> str:
    value = _text(tree, path)
    parts = value.split("/")
    if len(parts) != 4 or parts[0] != "projects" or parts[2] != kind or not all(parts):
        raise ConfigError(f"{path}: {value!r} must look like projects/PROJECT/{kind}/NAME")
    return value


def _positive_int(tree: Mapping[str, Any], path: str) -> int:
    value = _get(tree, path)
    if isinstance(value, str) and value.isdigit():  # HOCON may quote numbers
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(f"{path}: must be a positive integer, got {value!r}")
    return value


def _port(tree: Mapping[str, Any], path: str) -> int:
    value = _positive_int(tree, path)
    if value > 65535:
        raise ConfigError(f"{path}: must be a port (1-65535), got {value}")
    return value


def _optional_text(tree: Mapping[str, Any], path: str) -> str | None:
    value = _get(tree, path)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{path}: must be a non-empty string, got {value!r}")
    return value


def _tags(tree: Mapping[str, Any], path: str) -> tuple[tuple[str, str], ...]:
    value = _get(tree, path)
    if not isinstance(value, Mapping):
        raise ConfigError(f"{path}: must be an object of names to values, got {value!r}")
    return tuple((str(name), str(tag)) for name, tag in value.items())


def _delay(tree: Mapping[str, Any], path: str) -> float:
    return duration_s(_get(tree, path), path)


def _flag(tree: Mapping[str, Any], path: str) -> bool:
    value = _get(tree, path)
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    if not isinstance(value, bool):
        raise ConfigError(f"{path}: must be true or false, got {value!r}")
    return value


def _criteria(tree: Mapping[str, Any], path: str) -> tuple[SchemaCriterion, ...]:
    value = _get(tree, path)
    if not isinstance(value, list):
        raise ConfigError(f"{path}: must be a list of iglu:vendor/name/jsonschema/M-R-A")
    try:
        return tuple(SchemaCriterion.parse(str(item)) for item in value)
    except ValueError as error:
        raise ConfigError(f"{path}: {error}") from None


def leaf_paths(node: Any, prefix: str = "") -> Iterator[str]:
    """Yield the dotted path of every leaf of a config tree (``a.b.c``), in document order."""
    if isinstance(node, Mapping) and node:
        for key, child in node.items():
            yield from leaf_paths(child, f"{prefix}.{key}" if prefix else str(key))
    else:
        yield prefix
