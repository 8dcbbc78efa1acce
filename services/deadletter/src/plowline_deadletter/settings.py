"""The dead-letter writer's settings: command-line values over ``PLOWLINE_DEADLETTER_*`` variables.

Notes:
    Validated once at start (``extra="forbid"``: a misspelt key is an error). The emulator
    endpoints are read from the variables the Google clients know
    (``PUBSUB_EMULATOR_HOST``, ``STORAGE_EMULATOR_HOST``); unset means Google Cloud.
"""

from __future__ import annotations

from pathlib import Path

from plowline_cloud.service_settings import EmulatorEndpoints
from plowline_core.config import DeadLetterOptions
from pydantic import (
    Field,
    NonNegativeFloat,
    PositiveFloat,
    PositiveInt,
    field_validator,
    model_validator,
)
from pydantic_settings import SettingsConfigDict

ENV_PREFIX = "PLOWLINE_DEADLETTER_"


class DeadLetterSettings(EmulatorEndpoints):
    """Everything ``plowline-deadletter run`` needs."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX)

    config: str | Path  # a path or base64 of JSON/HOCON (plowline_cloud.config_source)
    #: both required, except with a 2.x config (plowline_core.v2_names derives them)
    bad_rows_sub: str | None = None
    bucket: str | None = None
    window: PositiveFloat = 60.0
    max_rows: PositiveInt = 10_000
    gzip: bool = False
    #: seconds of objects read at start to recognise bad rows written before it; 0 = off
    dedup_lookback: NonNegativeFloat = 600.0
    port: int = Field(8081, ge=0, le=65535)
    max_outstanding: PositiveInt = 20_000
    #: unset: max(600, window + 300), so a longer --window never trips liveness by itself
    stall_timeout: PositiveFloat | None = None
    log_level: str = "INFO"
    log_json: bool = True

    @field_validator("bucket")
    @classmethod
    def _gs_url(cls, value: str | None) -> str | None:
        if value is not None and (not value.startswith("gs://") or len(value) <= len("gs://")):
            raise ValueError(f"must look like gs://bucket[/path], got {value!r}")
        return value

    @model_validator(mode="after")
    def _stall_after_window(self) -> DeadLetterSettings:
        # A row waits up to one window for its object: that is not a stall.
        if self.stall_timeout is not None and self.stall_timeout <= self.window:
            raise ValueError(
                f"stallTimeout ({self.stall_timeout:g} s) must be longer than window "
                f"({self.window:g} s): rows wait a window for their object; raise stallTimeout"
            )
        return self

    @property
    def stall_timeout_s(self) -> float:
        """Return the stall timeout: the one given, else max(600, window + 300) seconds."""
        return self.stall_timeout or max(600.0, self.window + 300.0)

    def options(self) -> DeadLetterOptions:
        """Return the core option object."""
        return DeadLetterOptions(window=self.window, max_rows=self.max_rows, gzip=self.gzip)
