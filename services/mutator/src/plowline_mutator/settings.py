"""The mutator's settings: command-line flags over ``PLOWLINE_MUTATOR_*`` environment variables.

Every subcommand builds one ``MutatorSettings`` at start (``settings_from_args``) and passes
it down; nothing else reads the environment. The emulator endpoints use the standard
Google names (``PUBSUB_EMULATOR_HOST``, ``BIGQUERY_EMULATOR_HOST``), unset on GCP.
``resolver`` may be given as 2.x's ``--iglu-config``; a 2.x config makes ``major`` the
column mode unless one is set, and its ``monitoring.webhook`` the webhook the listener
alerts setup errors to unless ``PLOWLINE_MUTATOR_WEBHOOK_ENDPOINT`` is set (``with_config``).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from plowline_cloud.chassis import describe_errors
from plowline_cloud.service_settings import EmulatorEndpoints, IgluConfigAlias
from plowline_core.errors import ConfigError
from plowline_core.pipeline_config import PipelineConfig
from plowline_core.schema.entity import ColumnMode
from plowline_core.webhook import WebhookSettings, parse_tags
from pydantic import Field as Setting
from pydantic import SecretStr, ValidationError, field_validator
from pydantic_settings import SettingsConfigDict

ENV_PREFIX = "PLOWLINE_MUTATOR_"
#: Flags not spelt ``--`` and the setting's name in kebab case (``describe_errors``).
_FLAG_NAMES = {"resolver": "--resolver (or 2.x's --iglu-config)", "token": "--token-file"}
#: Command-line attributes copied onto settings of the same name when given.
_FROM_ARGS = (
    "config",
    "resolver",
    "iglu_config",
    "types_subscription",
    "column_mode",
    "iglu_not_found",
    "host",
    "port",
    "insecure_no_auth",
    "open_read_access",
    "max_body_bytes",
    "refresh_interval",
    "verbose",
    "stall_timeout",
)


class MutatorSettings(EmulatorEndpoints, IgluConfigAlias):
    """Everything the mutator needs to start, validated once."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX)

    config: str | Path | None = None  # a path or base64 (plowline_cloud.config_source)
    resolver: str | Path | None = None
    iglu_config: str | Path | None = None  # 2.x's name for resolver
    types_subscription: str | None = None  # 2.x configs (unset: plowline_core.v2_names)
    column_mode: ColumnMode = ColumnMode.FULL
    iglu_not_found: str | None = None
    host: str = "127.0.0.1"
    port: int = Setting(default=8080, ge=0, le=65535)
    token: SecretStr | None = None
    insecure_no_auth: bool = False
    open_read_access: bool = False
    max_body_bytes: int = Setting(default=64 * 1024, ge=1024, le=64 * 1024 * 1024)
    refresh_interval: float = Setting(default=60.0, gt=0)
    retry_delay: float = Setting(default=1.0, ge=0)
    stall_timeout: float = Setting(default=300.0, gt=0)
    verbose: bool = False
    webhook_endpoint: str | None = None  # 2.x's monitoring.webhook.endpoint: alerts only
    webhook_tags: str | None = None  # NAME=VALUE,… (2.x's monitoring.webhook.tags)
    log_level: str = "INFO"
    log_json: bool = True

    @field_validator("token")
    @classmethod
    def _token_not_blank(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and not value.get_secret_value().strip():
            raise ValueError("the API token must not be blank")
        return value

    def with_config(self, pipeline: PipelineConfig) -> MutatorSettings:
        """Return these settings with a 2.x config's column mode and webhook, unless set."""
        v2 = pipeline.v2
        if v2 is None:
            return self
        update: dict[str, Any] = {}
        if "column_mode" not in self.model_fields_set:
            update["column_mode"] = ColumnMode.MAJOR
        if "webhook_endpoint" not in self.model_fields_set and v2.webhook_endpoint:
            update["webhook_endpoint"] = v2.webhook_endpoint
            tags = ",".join(f"{name}={value}" for name, value in v2.webhook_tags)
            update["webhook_tags"] = tags or None
        return self.model_copy(update=update)

    def webhook(self) -> WebhookSettings | None:
        """Return where to send setup-error alerts, or None when no endpoint is set.

        Raises:
            ConfigError: the endpoint is no http(s) URL, or a tag is not NAME=VALUE.
        """
        if not self.webhook_endpoint:
            return None
        try:
            return WebhookSettings(self.webhook_endpoint, parse_tags(self.webhook_tags or ""))
        except ConfigError as error:
            raise ConfigError(f"PLOWLINE_MUTATOR_WEBHOOK_*: {error}") from None

    def require(self, *names: str) -> None:
        """Raise ConfigError naming each of the given settings that is unset."""
        missing = [name for name in names if getattr(self, name) is None]
        if missing:
            flags = ", ".join(f"--{name}" for name in missing)
            raise ConfigError(f"missing {flags} (or {ENV_PREFIX}{missing[0].upper()})")

    def require_auth(self) -> None:
        """Refuse to serve without a token unless ``--insecure-no-auth`` was given."""
        if self.token is None and not self.insecure_no_auth:
            raise ConfigError(
                "no API token: set PLOWLINE_MUTATOR_TOKEN or --token-file, "
                "or pass --insecure-no-auth to serve without authentication"
            )


def settings_from_args(args: argparse.Namespace, **overrides: Any) -> MutatorSettings:
    """Build the settings from parsed flags (which win) and the environment.

    Raises:
        ConfigError: a value is invalid or the token file cannot be read.
    """
    values: dict[str, Any] = {
        name: getattr(args, name) for name in _FROM_ARGS if getattr(args, name, None) is not None
    }
    if values.get("insecure_no_auth") is False:
        del values["insecure_no_auth"]  # absent flag: let the environment decide
    for flag in ("verbose", "open_read_access"):
        if values.get(flag) is False:
            del values[flag]  # absent flag: let the environment decide
    token_file: Path | None = getattr(args, "token_file", None)
    if token_file is not None:
        values["token"] = _read_token(token_file)
    values.update(overrides)
    try:
        return MutatorSettings(**values)
    except ValidationError as error:
        raise ConfigError(describe_errors(error, ENV_PREFIX, _FLAG_NAMES)) from None


def _read_token(path: Path) -> SecretStr:
    try:
        return SecretStr(path.read_text().strip())
    except OSError as error:
        raise ConfigError(f"{path}: cannot read the token file: {error.strerror}") from error
