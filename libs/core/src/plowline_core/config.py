"""The Snowplow ``bigquery_config`` and plowline's own option objects.

``BigQueryConfig.parse`` accepts the self-describing
``iglu:com.snowplowanalytics.snowplow.storage/bigquery_config/jsonschema/1-0-0`` exactly as
Snowplow's loader 0.x/1.x does. ``LoaderOptions``, ``RepeaterOptions`` and ``DeadLetterOptions``
are plowline's settings that the Snowplow config has no room for; services wrap them in
pydantic-settings for environment overrides and build these values from them.

Notes:
    Pure; every value object validates itself and raises ``ConfigError`` naming the field.
    The JSON Schema below mirrors Iglu Central's, with ``load`` written as an enum of modes plus
    ``if``/``then`` rules so that a wrong mode reads ``data.load.mode: 'FOO' is not one of …``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from plowline_core.errors import ConfigError
from plowline_core.iglu.key import SchemaCriterion, SchemaKey, SchemaVer
from plowline_core.iglu.validation import check_self_describing
from plowline_core.schema.entity import ColumnMode
from plowline_core.schema.legacy import ColumnRules

BIGQUERY_CONFIG_KEY = SchemaKey(
    "com.snowplowanalytics.snowplow.storage", "bigquery_config", "jsonschema", SchemaVer(1, 0, 0)
)


class LoadKind(StrEnum):
    """How the loader writes to BigQuery (Snowplow's two modes plus the Storage Write API)."""

    STREAMING_INSERTS = "STREAMING_INSERTS"
    FILE_LOADS = "FILE_LOADS"
    STORAGE_WRITE_API = "STORAGE_WRITE_API"  # plowline's extension


class WriteStreamKind(StrEnum):
    """Which Storage Write API stream ``STORAGE_WRITE_API`` appends to."""

    DEFAULT = "default"  # a COMMITTED stream with offsets: at least once across deliveries
    EXACTLY_ONCE = "exactly-once"  # PENDING streams committed behind a ledger


@dataclass(frozen=True, slots=True)
class LoadMode:
    """``load``: streaming inserts with ``retry``, file loads every ``frequency`` seconds,
    or the Storage Write API on ``stream`` (``default`` when absent)."""

    mode: LoadKind
    retry: bool | None = None
    frequency: int | None = None
    stream: WriteStreamKind | None = None


@dataclass(frozen=True, slots=True)
class BigQueryConfig:
    """A parsed ``bigquery_config``; Pub/Sub names are short names in ``project_id``."""

    name: str
    id: str
    project_id: str
    dataset_id: str
    table_id: str
    input: str
    types_topic: str
    types_subscription: str
    bad_rows: str
    failed_inserts: str
    load: LoadMode
    purpose: str

    @classmethod
    def parse(cls, data: Mapping[str, Any]) -> BigQueryConfig:
        """Validate and parse the self-describing config.

        Raises:
            ConfigError: naming the offending key, e.g. ``data.load.mode: 'FOO' is not one of …``.
        """
        _, body = check_self_describing(data, {BIGQUERY_CONFIG_KEY: _SCHEMA})
        load = body["load"]
        return cls(
            name=body["name"],
            id=body["id"],
            project_id=body["projectId"],
            dataset_id=body["datasetId"],
            table_id=body["tableId"],
            input=body["input"],
            types_topic=body["typesTopic"],
            types_subscription=body["typesSubscription"],
            bad_rows=body["badRows"],
            failed_inserts=body["failedInserts"],
            load=_load_mode(load),
            purpose=body["purpose"],
        )

    @property
    def table_ref(self) -> str:
        """Return ``project.dataset.table``."""
        return f"{self.project_id}.{self.dataset_id}.{self.table_id}"


@dataclass(frozen=True, slots=True)
class LoaderOptions:
    """Loader settings beyond the Snowplow config.

    Attributes:
        column_mode: ``full`` (loader 0.x/1.x columns, default) or ``major`` (2.x).
        max_batch_messages: rows per insertAll request (BigQuery allows 50,000; the
            loader's default is 2,000, its chunk).
        max_batch_bytes: bytes per insertAll request (BigQuery's limit is 10 MB).
        parallelism: concurrent pull/insert tasks (Spark partitions).
        max_bad_row_bytes: a bad row larger than this becomes a ``size_violation``
            (Pub/Sub's message limit is 10 MB).
        legacy_columns: (``major``) schemas written as 1.x columns (2.x ``legacyColumns``).
        legacy_column_mode: (``major``) every schema written as a 1.x column (2.x
            ``legacyColumnMode``).
        skip_schemas: (``major``) schemas left out of rows and table (2.x ``skipSchemas``).
    """

    column_mode: ColumnMode = ColumnMode.FULL
    max_batch_messages: int = 2000
    max_batch_bytes: int = 5_000_000
    parallelism: int = 2
    max_bad_row_bytes: int = 6_900_000
    legacy_columns: tuple[SchemaCriterion, ...] = ()
    legacy_column_mode: bool = False
    skip_schemas: tuple[SchemaCriterion, ...] = ()

    @property
    def column_rules(self) -> ColumnRules:
        """The 2.x per-schema switches, as the row builder and the mutator take them."""
        return ColumnRules(self.skip_schemas, self.legacy_columns, self.legacy_column_mode)

    def __post_init__(self) -> None:
        _coerce_column_mode(self)
        _check_positive(self, "max_batch_messages", "max_batch_bytes", "parallelism")
        _check_positive(self, "max_bad_row_bytes")
        if self.max_batch_bytes > 10_000_000:
            raise ConfigError(
                "max_batch_bytes: must be at most 10000000 (BigQuery's request limit)"
            )


@dataclass(frozen=True, slots=True)
class RepeaterOptions:
    """Repeater settings (Snowplow's defaults).

    Attributes:
        backoff_period: seconds after the failure was first seen (the failed-insert
            message's publish time, not ``etl_tstamp`` as in Snowplow) before a row is
            retried regardless.
        buffer_size: dead-end rows buffered before an object is written.
        window: seconds after which a partial dead-end buffer is written anyway.
        dead_end_bucket: ``gs://bucket[/prefix]`` for rows that can never be inserted.
    """

    backoff_period: float = 900.0
    buffer_size: int = 20
    window: float = 30.0
    dead_end_bucket: str | None = None

    def __post_init__(self) -> None:
        _check_positive(self, "backoff_period", "buffer_size", "window")
        bucket = self.dead_end_bucket
        if bucket is not None and (not bucket.startswith("gs://") or len(bucket) <= 5):
            raise ConfigError(f"dead_end_bucket: {bucket!r} must look like gs://bucket[/prefix]")


@dataclass(frozen=True, slots=True)
class DeadLetterOptions:
    """Dead-letter writer settings.

    Attributes:
        window: seconds of bad rows per object (per bad-row type).
        max_rows: rows after which an object is written before its window ends.
        gzip: compress objects (``.ndjson.gz``).
    """

    window: float = 60.0
    max_rows: int = 10_000
    gzip: bool = False

    def __post_init__(self) -> None:
        _check_positive(self, "window", "max_rows")


def _load_mode(load: Mapping[str, Any]) -> LoadMode:
    kind = LoadKind(load["mode"])
    stream = load.get("stream")
    if kind is LoadKind.STORAGE_WRITE_API:
        stream = WriteStreamKind(stream or WriteStreamKind.DEFAULT)
    return LoadMode(kind, load.get("retry"), load.get("frequency"), stream)


def _check_positive(options: object, *names: str) -> None:
    for name in names:
        value = getattr(options, name)
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise ConfigError(f"{name}: must be a positive number, got {value!r}")


def _coerce_column_mode(options: LoaderOptions) -> None:
    try:
        mode = ColumnMode(options.column_mode)
    except ValueError:
        allowed = [mode.value for mode in ColumnMode]
        raise ConfigError(f"column_mode: {options.column_mode!r} is not one of {allowed}") from None
    object.__setattr__(options, "column_mode", mode)


def _name(minimum: int = 1) -> dict[str, Any]:
    return {"type": "string", "minLength": minimum, "maxLength": 255}


_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "id": {"type": "string", "format": "uuid"},
        "projectId": {"type": "string"},
        "input": _name(3),
        "datasetId": {"type": "string"},
        "tableId": {"type": "string"},
        "load": {
            "type": "object",
            "properties": {
                "mode": {"enum": ["STREAMING_INSERTS", "FILE_LOADS", "STORAGE_WRITE_API"]},
                "retry": {"type": "boolean"},
                "frequency": {"type": "integer", "minimum": 100, "maximum": 86400},
                "stream": {"enum": ["default", "exactly-once"]},
            },
            "required": ["mode"],
            "allOf": [
                {
                    "if": {"properties": {"mode": {"const": "STREAMING_INSERTS"}}},
                    "then": {"required": ["retry"]},
                },
                {
                    "if": {"properties": {"mode": {"const": "FILE_LOADS"}}},
                    "then": {"required": ["frequency"]},
                },
                {
                    "if": {"properties": {"mode": {"not": {"const": "STORAGE_WRITE_API"}}}},
                    "then": {"not": {"required": ["stream"]}},
                },
            ],
        },
        "typesTopic": {"type": "string"},
        "typesSubscription": _name(3),
        "badRows": _name(3),
        "failedInserts": _name(3),
        "purpose": {"type": "string", "enum": ["ENRICHED_EVENTS"]},
    },
    "additionalProperties": False,
    "required": [
        "name",
        "id",
        "projectId",
        "input",
        "datasetId",
        "tableId",
        "load",
        "typesTopic",
        "badRows",
        "failedInserts",
        "typesSubscription",
        "purpose",
    ],
}
