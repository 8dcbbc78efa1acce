"""What every service's settings share: the local stand-ins' endpoints and 2.x's ``--iglu-config``.

Each service's settings (``LoaderSettings``, ``MutatorSettings``, ``RepeaterSettings``,
``DeadLetterSettings``) are a pydantic-settings class of their own, flags over
``PLOWLINE_<SERVICE>_*`` variables over defaults; what they all read the same way is here,
and the rules they all keep (``ServiceSettings``: ``extra="forbid"``, frozen).

Notes:
    The endpoints are read from the variables the Google clients and the local stack know
    (``PUBSUB_EMULATOR_HOST``, ``BIGQUERY_EMULATOR_HOST``, ``STORAGE_EMULATOR_HOST``, and the
    devstack's ``BIGQUERY_EMULATOR_GRPC_HOST`` for the Storage Write API), never prefixed;
    unset means Google Cloud.
"""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices, Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


def _env(name: str) -> AliasChoices:
    return AliasChoices(name.lower(), name)


class ServiceSettings(BaseSettings):
    """The rules every service's settings keep: a misspelt key is an error, fields are set
    by name or alias, and nothing changes once validated (a subclass adds its
    ``env_prefix``)."""

    model_config = SettingsConfigDict(extra="forbid", populate_by_name=True, frozen=True)


class EmulatorEndpoints(ServiceSettings):
    """Where the local stand-ins listen (all unset on Google Cloud)."""

    pubsub_emulator_host: str | None = Field(None, validation_alias=_env("PUBSUB_EMULATOR_HOST"))
    bigquery_emulator_host: str | None = Field(
        None, validation_alias=_env("BIGQUERY_EMULATOR_HOST")
    )
    storage_emulator_host: str | None = Field(None, validation_alias=_env("STORAGE_EMULATOR_HOST"))
    bigquery_emulator_grpc_host: str | None = Field(
        None, validation_alias=_env("BIGQUERY_EMULATOR_GRPC_HOST")
    )


class IgluConfigAlias(ServiceSettings):
    """Settings with a ``resolver`` that Snowplow 2.x names ``iglu_config`` (``--iglu-config``).

    Notes:
        The subclass declares ``resolver`` and ``iglu_config``; when only ``iglu_config``
        is given, it becomes ``resolver`` (a given ``resolver`` wins).
    """

    @model_validator(mode="before")
    @classmethod
    def _iglu_config(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("resolver") is None:
            iglu = data.get("iglu_config")
            if iglu is not None:
                return {**data, "resolver": iglu}
        return data
