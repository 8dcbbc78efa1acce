"""The loader's settings: command-line values over ``PLOWLINE_LOADER_*`` variables over defaults.

Notes:
    Validated once at start (``extra="forbid"``: a misspelt key is an error); a bad value
    becomes a ``ConfigError`` naming the flag and the variable (``describe_errors``).
    The emulator endpoints come from the variables the Google clients know
    (``PUBSUB_EMULATOR_HOST``, ``BIGQUERY_EMULATOR_HOST``, ``STORAGE_EMULATOR_HOST``) and
    the devstack's ``BIGQUERY_EMULATOR_GRPC_HOST`` (the Storage Write API's gRPC port);
    unset means Google Cloud. ``trigger_interval`` unset means: ``load.frequency`` seconds
    in ``FILE_LOADS`` mode (one load job per partition per window), back to back otherwise.
    ``config`` and ``resolver`` are a path or base64 of JSON/HOCON (``plowline_cloud.config_source``).
    ``max_bad_row_bytes`` is capped so that a bad row always fits one Pub/Sub message.
    ``resolver`` may be given as 2.x's ``--iglu-config`` instead. A 2.x config brings
    2.x's settings (``with_config``): they stand in for the defaults, never for a flag or
    a variable the user set.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from plowline_cloud.chassis import describe_errors
from plowline_cloud.service_settings import EmulatorEndpoints, IgluConfigAlias
from plowline_core.config import LoaderOptions, LoadKind, LoadMode
from plowline_core.errors import ConfigError
from plowline_core.pipeline_config import PipelineConfig
from plowline_core.schema.entity import ColumnMode
from plowline_core.webhook import DEFAULT_HEARTBEAT_S, WebhookSettings, parse_tags
from pydantic import (
    Field,
    NonNegativeFloat,
    PositiveFloat,
    PositiveInt,
    ValidationError,
    ValidationInfo,
    field_validator,
)
from pydantic_settings import SettingsConfigDict

from plowline_loader.batch.announcements import DEFAULT_REPUBLISH_AFTER_S
from plowline_loader.batch.schema_hold import DEFAULT_BOUND_S, MAX_BOUND_S, SchemaHold
from plowline_loader.batch.sizes import CHUNK_MESSAGES, PUBSUB_MESSAGE_BYTES
from plowline_loader.compressed_input import MAX_BYTES_IN_BATCH, MAX_BYTES_SINGLE_PAYLOAD
from plowline_loader.source.lease import MAX_DEADLINE_S, MIN_DEADLINE_S
from plowline_loader.source.pulls import TASK_SECONDS

ENV_PREFIX = "PLOWLINE_LOADER_"
MAX_ROWS_PER_INSERT = 50_000
"""BigQuery's limit of rows in one insertAll request (it advises 500; the bytes, 10 MB)."""
_FLAG_NAMES = {"resolver": "--resolver (or 2.x's --iglu-config)"}


class LoaderSettings(EmulatorEndpoints, IgluConfigAlias):
    """Everything ``plowline-loader run`` and ``backfill`` need."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX)

    config: str | Path  # a path or base64 of JSON/HOCON (plowline_cloud.config_source)
    resolver: str | Path  # or iglu_config (2.x's name)
    iglu_config: str | Path | None = None
    column_mode: ColumnMode = ColumnMode.FULL
    checkpoint: str | None = None
    master: str | None = None  # None: local[*] in a plain run, the launcher's under spark-submit
    port: int = Field(8083, ge=0, le=65535)
    max_messages: PositiveInt = 10_000
    max_bytes: PositiveInt = 16 * 1024 * 1024
    partitions: PositiveInt = 2
    trigger_interval: NonNegativeFloat | None = None
    grace_period: PositiveFloat = 30.0
    task_seconds: NonNegativeFloat = TASK_SECONDS  # long-lived tasks (source.pulls.TaskRounds)
    ack_deadline: int = Field(60, ge=MIN_DEADLINE_S, le=MAX_DEADLINE_S)
    lease_interval: PositiveFloat = 20.0
    pull_timeout: PositiveFloat = 1.0
    schema_refresh: PositiveFloat = 60.0
    max_bad_row_bytes: int = Field(6_900_000, gt=0, le=PUBSUB_MESSAGE_BYTES)
    insert_batch_rows: int = Field(CHUNK_MESSAGES, gt=0, le=MAX_ROWS_PER_INSERT)
    max_bytes_single_payload: PositiveInt = MAX_BYTES_SINGLE_PAYLOAD  # 2.x's decompression
    max_bytes_in_batch: PositiveInt = MAX_BYTES_IN_BATCH
    exit_on_missing_iglu_schema: bool | None = None  # None: true for column mode major (2.x)
    missing_schema_bound: float = Field(DEFAULT_BOUND_S, gt=0, le=MAX_BOUND_S)
    webhook_endpoint: str | None = None  # 2.x's monitoring.webhook.endpoint
    webhook_heartbeat: PositiveFloat = DEFAULT_HEARTBEAT_S  # 2.x's monitoring.webhook.heartbeat
    webhook_tags: str | None = None  # NAME=VALUE,… (2.x's monitoring.webhook.tags)
    backoff_initial: PositiveFloat = 0.5  # 2.x's retries.transientErrors.delay
    backoff_max: PositiveFloat = 30.0
    setup_backoff: PositiveFloat | None = None  # 2.x's retries.setupErrors.delay
    stall_timeout: PositiveFloat = 600.0  # 2.x's monitoring.healthProbe.unhealthyLatency
    spark_ui: bool = False
    class_archive: str | None = None  # the driver JVM's class archive (``class_archive.py``)
    log_level: str = "INFO"
    log_json: bool = True
    staging_bucket: str | None = None
    iglu_not_found: str | None = None
    ledger_table: str | None = None
    #: 2.x configs: the names 2.x has no key for (unset: plowline_core.v2_names)
    types_topic: str | None = None
    failed_inserts_topic: str | None = None
    #: seconds before a type still without a column (e.g. the table at BigQuery's column
    #: limit) is announced again; 2.x: retries.tooManyColumns.delay
    too_many_columns_delay: PositiveFloat = DEFAULT_REPUBLISH_AFTER_S

    @field_validator("lease_interval")
    @classmethod
    def _lease_below_deadline(cls, value: float, info: ValidationInfo) -> float:
        """Hold the lease interval below the ack deadline (``source.lease``: a lease must
        survive one failed extension)."""
        deadline = info.data.get("ack_deadline")  # absent when it was invalid itself
        if deadline is not None and value >= deadline:
            raise ValueError(f"must be below --ack-deadline ({value} >= {deadline})")
        return value

    @field_validator("task_seconds")
    @classmethod
    def _task_within_grace(cls, value: float, info: ValidationInfo) -> float:
        """Hold a task's life to half the grace period: a stop waits for the batch in flight."""
        grace = info.data.get("grace_period")  # absent when it was invalid itself
        if grace is not None and value > grace / 2:
            raise ValueError(
                f"must be at most half of --grace-period ({value} > {grace} / 2): a graceful "
                "stop waits for the tasks in flight; raise --grace-period or lower this"
            )
        return value

    @field_validator("stall_timeout")
    @classmethod
    def _stall_over_task_life(cls, value: float, info: ValidationInfo) -> float:
        """Hold the stall timeout to four task lives: the watch sees progress as a batch ends."""
        task = info.data.get("task_seconds")  # absent when it was invalid itself
        if task is not None and value < 4 * task:
            raise ValueError(
                f"must be at least four times --task-seconds ({value} < 4 * {task}): a long-lived "
                "batch shows progress when its tasks end; lower --task-seconds or raise this"
            )
        return value

    def with_config(self, pipeline: PipelineConfig) -> LoaderSettings:
        """Return these settings with a 2.x config's values where the user set none.

        ``batching.maxDelay`` is the trigger interval, ``batching.maxBytes`` the bytes per
        partition, ``batching.writeBatchConcurrency`` the partitions,
        ``monitoring.healthProbe.port`` the port, ``monitoring.webhook`` the webhook,
        ``retries.transientErrors.delay`` and ``retries.setupErrors.delay`` the first waits
        of the batch retries (``StreamSettings.retry_delay``),
        ``monitoring.healthProbe.unhealthyLatency`` the stall timeout; the column mode is
        ``major``.
        """
        v2 = pipeline.v2
        if v2 is None:
            return self
        from_config: dict[str, Any] = {
            "column_mode": ColumnMode.MAJOR,
            "port": v2.health_port,
            "trigger_interval": v2.max_delay_s,
            "max_bytes": v2.max_bytes,
            "partitions": v2.write_batch_concurrency,
            "too_many_columns_delay": v2.too_many_columns_delay_s,
            "backoff_initial": v2.transient_delay_s,
            "setup_backoff": v2.setup_delay_s,
            "stall_timeout": v2.unhealthy_latency_s,
            "max_bytes_single_payload": v2.max_bytes_single_payload,
            "max_bytes_in_batch": v2.max_bytes_in_batch,
            "exit_on_missing_iglu_schema": v2.exit_on_missing_iglu_schema,
            "webhook_endpoint": v2.webhook_endpoint,
            "webhook_heartbeat": v2.webhook_heartbeat_s,
            "webhook_tags": ",".join(f"{name}={value}" for name, value in v2.webhook_tags) or None,
        }
        update = {k: v for k, v in from_config.items() if k not in self.model_fields_set}
        return self.model_copy(update=update)

    def trigger_interval_s(self, load: LoadMode) -> float:
        """Return the seconds between micro-batch starts for ``load`` (see the module notes)."""
        if self.trigger_interval is not None:
            return self.trigger_interval
        if load.mode is LoadKind.FILE_LOADS and load.frequency:
            return float(load.frequency)
        return 0.0

    def webhook_tag_map(self) -> dict[str, str]:
        """Return ``webhook_tags`` as a mapping.

        Raises:
            ConfigError: a tag without ``=``.
        """
        try:
            return parse_tags(self.webhook_tags or "")
        except ConfigError as error:
            raise ConfigError(f"--webhook-tags ({ENV_PREFIX}WEBHOOK_TAGS): {error}") from None

    def webhook(self) -> WebhookSettings | None:
        """Return where to send alerts and heartbeats, or None (no endpoint: none are sent).

        Raises:
            ConfigError: an endpoint that is not an http(s) URL, or a tag not ``name=value``.
        """
        if not self.webhook_endpoint:
            return None
        tags = self.webhook_tag_map()
        try:
            return WebhookSettings(self.webhook_endpoint, tags, self.webhook_heartbeat)
        except ConfigError as error:
            raise ConfigError(
                f"--webhook-endpoint ({ENV_PREFIX}WEBHOOK_ENDPOINT; a 2.x config's "
                f"monitoring.webhook.endpoint): {error}"
            ) from None

    def schema_hold(self) -> SchemaHold:
        """Return how events needing a missing schema are held (2.x's exitOnMissingIgluSchema)."""
        enabled = self.exit_on_missing_iglu_schema
        if enabled is None:
            enabled = self.column_mode is ColumnMode.MAJOR
        return SchemaHold(enabled, self.missing_schema_bound)

    def options(self, pipeline: PipelineConfig | None = None) -> LoaderOptions:
        """Return the core option object, 2.x's column keys from ``pipeline``.

        Notes:
            Every value it takes from these settings is already held to its range by the
            fields above, so it is built where it is used (``bootstrap``), not at load.
        """
        v2 = pipeline.v2 if pipeline is not None else None
        return LoaderOptions(
            column_mode=self.column_mode,
            max_batch_messages=self.insert_batch_rows,
            parallelism=self.partitions,
            max_bad_row_bytes=self.max_bad_row_bytes,
            legacy_columns=v2.legacy_columns if v2 else (),
            legacy_column_mode=v2.legacy_column_mode if v2 else False,
            skip_schemas=v2.skip_schemas if v2 else (),
        )


def load_settings(values: Mapping[str, Any]) -> LoaderSettings:
    """Return the settings from flag ``values`` (None means unset) over the environment.

    Raises:
        ConfigError: naming every bad value by its flag and variable.
    """
    given = {key: value for key, value in values.items() if value is not None}
    try:
        settings = LoaderSettings(**given)
        settings.webhook_tag_map()
    except ValidationError as error:
        raise ConfigError(describe_errors(error, ENV_PREFIX, _FLAG_NAMES)) from None
    settings.webhook()
    return settings
