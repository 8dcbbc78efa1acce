"""The repeater's settings: command-line values over ``PLOWLINE_REPEATER_*`` variables.

Notes:
    Validated once at start (``extra="forbid"``). The emulator endpoints come from the
    variables the Google clients know (``PUBSUB_EMULATOR_HOST``, ``BIGQUERY_EMULATOR_HOST``,
    ``STORAGE_EMULATOR_HOST``, and the devstack's ``BIGQUERY_EMULATOR_GRPC_HOST`` for the
    Storage Write API in exactly-once mode); unset means Google Cloud.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal

from plowline_cloud.service_settings import IgluConfigAlias
from plowline_core.config import RepeaterOptions
from plowline_core.errors import ConfigError
from pydantic import (
    Field,
    PositiveFloat,
    PositiveInt,
    field_validator,
    model_validator,
)
from pydantic_settings import SettingsConfigDict

ENV_PREFIX = "PLOWLINE_REPEATER_"
STARTUP_TIMEOUT_S = 60.0
"""The longest a start-up call may wait (``--startupTimeout``'s default)."""


class RepeaterSettings(IgluConfigAlias):
    """Everything ``plowline-repeater run`` needs."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX)

    config: str | Path  # a path or base64 of JSON/HOCON (plowline_cloud.config_source)
    resolver: str | Path  # or iglu_config (2.x's name)
    iglu_config: str | Path | None = None
    failed_inserts_sub: str | None = None  # 1.x: repeater.input.subscription
    dead_end_bucket: str | None = None  # 1.x: repeater.output.deadLetters.bucket
    backoff_period: PositiveFloat = 900.0
    buffer_size: PositiveInt = 20
    window: PositiveFloat = 30.0
    verbose: bool = False
    port: int = Field(8082, ge=0, le=65535)
    max_outstanding: PositiveInt = 1000
    schema_refresh: PositiveFloat = 1.0
    #: exactly-once mode: the loader's ledger (its --ledger-table); unset: <events table>_ledger
    ledger_table: str | None = None
    log_json: bool = True
    #: start-up calls (exactly-once: the ledger's create/check) give up after this long
    startup_timeout: PositiveFloat = STARTUP_TIMEOUT_S
    #: unset: max(1800, backoffPeriod + window + 300), the longest a row waits by design + margin
    stall_timeout: PositiveFloat | None = None

    @model_validator(mode="after")
    def _stall_after_backoff(self) -> RepeaterSettings:
        # A row may wait backoffPeriod to fit, then a window for its dead-end object.
        longest = self.backoff_period + self.window
        if self.stall_timeout is not None and self.stall_timeout <= longest:
            raise ValueError(
                f"stallTimeout ({self.stall_timeout:g} s) must be longer than backoffPeriod + "
                f"window ({longest:g} s), the longest a row waits by design; raise stallTimeout"
            )
        return self

    @property
    def stall_timeout_s(self) -> float:
        """Return the stall timeout: the one given, else max(1800, backoffPeriod + window + 300)."""
        return self.stall_timeout or max(1800.0, self.backoff_period + self.window + 300.0)

    @field_validator("dead_end_bucket")
    @classmethod
    def _gs_url(cls, value: str | None) -> str | None:
        if value is not None and (not value.startswith("gs://") or len(value) <= len("gs://")):
            raise ValueError(f"must start with gs:// (gs://bucket[/path]), got {value!r}")
        return value

    def options(self, config_bucket: str | None = None) -> RepeaterOptions:
        """Return the core option object; the flag's bucket wins over the config's.

        Raises:
            ConfigError: no dead-end bucket in either, or one that is not ``gs://…``.
        """
        bucket = self.dead_end_bucket or config_bucket
        if bucket is None:
            raise ConfigError(
                "no dead-end bucket: pass --deadEndBucket gs://… (0.x), set "
                "repeater.output.deadLetters.bucket in the 1.x config, or "
                "PLOWLINE_REPEATER_DEAD_END_BUCKET"
            )
        return RepeaterOptions(
            backoff_period=self.backoff_period,
            buffer_size=self.buffer_size,
            window=self.window,
            dead_end_bucket=bucket,
        )


@dataclass(frozen=True, slots=True)
class ReplaySettings:
    """Everything ``plowline-repeater replay`` needs (validated by its argument parser)."""

    url: str
    config: str | Path | None = None
    since: datetime | None = None
    until: datetime | None = None
    error_matches: re.Pattern[str] | None = None
    to: Literal["table", "failed-inserts"] = "table"
    dry_run: bool = False
    #: exactly-once mode: the loader's ledger (its --ledger-table); unset: <events table>_ledger
    ledger_table: str | None = None
