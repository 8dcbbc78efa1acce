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
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from plowline_core.config import LoaderOptions, LoadKind, LoadMode
from plowline_core.errors import ConfigError
from plowline_core.schema.entity import ColumnMode
from plowline_core.webhook import DEFAULT_HEARTBEAT_S, WebhookSettings, parse_tags
from pydantic import (
    AliasChoices,
    Field,
    NonNegativeFloat,
    PositiveFloat,
    PositiveInt,
    ValidationError,
)
from pydantic_settings import BaseSettings, SettingsConfigDict

from plowline_loader.limits import PUBSUB_MESSAGE_BYTES

ENV_PREFIX = "PLOWLINE_LOADER_"


class LoaderSettings(BaseSettings):
    """Everything ``plowline-loader run`` and ``backfill`` need."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, extra="forbid", populate_by_name=True, frozen=True
    )

    config: str | Path  # a path or base64 of JSON/HOCON (plowline_cloud.config_source)
    resolver: str | Path
    column_mode: ColumnMode = ColumnMode.FULL
    checkpoint: str | None = None
    master: str | None = None  # None: local[*] in a plain run, the launcher's under spark-submit
    port: int = Field(8083, ge=0, le=65535)
    max_messages: PositiveInt = 10_000
    max_bytes: PositiveInt = 16 * 1024 * 1024
    partitions: PositiveInt = 2
    trigger_interval: NonNegativeFloat | None = None
    grace_period: PositiveFloat = 30.0
    ack_deadline: int = Field(60, ge=10, le=600)
    lease_interval: PositiveFloat = 20.0
    pull_timeout: PositiveFloat = 1.0
    schema_refresh: PositiveFloat = 60.0
    max_bad_row_bytes: int = Field(6_900_000, gt=0, le=PUBSUB_MESSAGE_BYTES)
    insert_batch_rows: PositiveInt = 500
    backoff_max: PositiveFloat = 30.0
    stall_timeout: PositiveFloat = 600.0
    spark_ui: bool = False
    class_archive: str | None = None  # the driver JVM's class archive (``class_archive.py``)
    log_level: str = "INFO"
    log_json: bool = True
    pubsub_emulator_host: str | None = Field(
        None, validation_alias=AliasChoices("pubsub_emulator_host", "PUBSUB_EMULATOR_HOST")
    )
    bigquery_emulator_host: str | None = Field(
        None, validation_alias=AliasChoices("bigquery_emulator_host", "BIGQUERY_EMULATOR_HOST")
    )
    storage_emulator_host: str | None = Field(
        None, validation_alias=AliasChoices("storage_emulator_host", "STORAGE_EMULATOR_HOST")
    )
    bigquery_emulator_grpc_host: str | None = Field(
        None,
        validation_alias=AliasChoices("bigquery_emulator_grpc_host", "BIGQUERY_EMULATOR_GRPC_HOST"),
    )
    staging_bucket: str | None = None
    iglu_not_found: str | None = None
    ledger_table: str | None = None
    webhook_endpoint: str | None = None  # 2.x's monitoring.webhook (``webhook()``)
    webhook_tags: str = ""
    webhook_heartbeat: PositiveFloat = DEFAULT_HEARTBEAT_S

    def trigger_interval_s(self, load: LoadMode) -> float:
        """Return the seconds between micro-batch starts for ``load`` (see the module notes)."""
        if self.trigger_interval is not None:
            return self.trigger_interval
        if load.mode is LoadKind.FILE_LOADS and load.frequency:
            return float(load.frequency)
        return 0.0

    def webhook(self) -> WebhookSettings | None:
        """Return where to send alerts and heartbeats, or None (no endpoint: none are sent).

        Raises:
            ConfigError: an endpoint that is not an http(s) URL, or a tag not ``name=value``.
        """
        if not self.webhook_endpoint:
            return None
        return WebhookSettings(
            self.webhook_endpoint, parse_tags(self.webhook_tags), self.webhook_heartbeat
        )

    def options(self) -> LoaderOptions:
        """Return the core option object (validated there too)."""
        return LoaderOptions(
            column_mode=self.column_mode,
            max_batch_messages=self.insert_batch_rows,
            parallelism=self.partitions,
            max_bad_row_bytes=self.max_bad_row_bytes,
        )


def load_settings(values: Mapping[str, Any]) -> LoaderSettings:
    """Return the settings from flag ``values`` (None means unset) over the environment.

    Raises:
        ConfigError: naming every bad value by its flag and variable.
    """
    given = {key: value for key, value in values.items() if value is not None}
    try:
        settings = LoaderSettings(**given)
        settings.options()
    except ValidationError as error:
        raise ConfigError(describe_errors(error)) from None
    try:
        settings.webhook()
    except ConfigError as error:
        raise ConfigError(
            f"--webhook-endpoint, --webhook-tags, --webhook-heartbeat "
            f"({ENV_PREFIX}WEBHOOK_*): {error}"
        ) from None
    if settings.lease_interval >= settings.ack_deadline:
        raise ConfigError(
            f"--lease-interval ({ENV_PREFIX}LEASE_INTERVAL) must be below --ack-deadline "
            f"({settings.lease_interval} >= {settings.ack_deadline})"
        )
    return settings


def describe_errors(error: ValidationError) -> str:
    """Return one line per invalid setting: ``--flag (VARIABLE): problem (got value)``."""
    lines = []
    for item in error.errors():
        name = str(item["loc"][0]) if item["loc"] else "settings"
        flag = "--" + name.replace("_", "-")
        got = f" (got {item['input']!r})" if item["type"] != "missing" else ""
        lines.append(f"{flag} ({ENV_PREFIX}{name.upper()}): {item['msg']}{got}")
    return "invalid settings: " + "; ".join(lines)
