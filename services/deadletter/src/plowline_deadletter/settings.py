"""The dead-letter writer's settings: command-line values over ``PLOWLINE_DEADLETTER_*`` variables.

Notes:
    Validated once at start (``extra="forbid"``: a misspelt key is an error). The emulator
    endpoints are read from the variables the Google clients know
    (``PUBSUB_EMULATOR_HOST``, ``STORAGE_EMULATOR_HOST``); unset means Google Cloud.
"""

from __future__ import annotations

from pathlib import Path

from plowline_core.config import DeadLetterOptions
from pydantic import AliasChoices, Field, PositiveFloat, PositiveInt, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class DeadLetterSettings(BaseSettings):
    """Everything ``plowline-deadletter run`` needs."""

    model_config = SettingsConfigDict(
        env_prefix="PLOWLINE_DEADLETTER_", extra="forbid", populate_by_name=True, frozen=True
    )

    config: str | Path  # a path or base64 of JSON/HOCON (plowline_cloud.config_source)
    bad_rows_sub: str
    bucket: str
    window: PositiveFloat = 60.0
    max_rows: PositiveInt = 10_000
    gzip: bool = False
    port: int = Field(8081, ge=0, le=65535)
    max_outstanding: PositiveInt = 20_000
    log_level: str = "INFO"
    log_json: bool = True
    pubsub_emulator_host: str | None = Field(
        None, validation_alias=AliasChoices("pubsub_emulator_host", "PUBSUB_EMULATOR_HOST")
    )
    storage_emulator_host: str | None = Field(
        None, validation_alias=AliasChoices("storage_emulator_host", "STORAGE_EMULATOR_HOST")
    )

    @field_validator("bucket")
    @classmethod
    def _gs_url(cls, value: str) -> str:
        if not value.startswith("gs://") or len(value) <= len("gs://"):
            raise ValueError(f"must look like gs://bucket[/path], got {value!r}")
        return value

    def options(self) -> DeadLetterOptions:
        """Return the core option object."""
        return DeadLetterOptions(window=self.window, max_rows=self.max_rows, gzip=self.gzip)
