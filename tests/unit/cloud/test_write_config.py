"""``load.mode: STORAGE_WRITE_API`` in the bigquery_config, beside Snowplow's two modes."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from plowline_core.config import BigQueryConfig, LoadKind, LoadMode, WriteStreamKind
from plowline_core.errors import ConfigError
from support.configs import bigquery_config

BASE: dict[str, Any] = bigquery_config(
    name="Loader", project="p", input="enriched", types_subscription="types-sub"
)


def _with_load(load: dict[str, Any]) -> dict[str, Any]:
    config = copy.deepcopy(BASE)
    config["data"]["load"] = load
    return config


@pytest.mark.parametrize(
    ("load", "expected"),
    [
        pytest.param(
            {"mode": "STORAGE_WRITE_API"},
            LoadMode(LoadKind.STORAGE_WRITE_API, stream=WriteStreamKind.DEFAULT),
            id="stream-defaults",
        ),
        pytest.param(
            {"mode": "STORAGE_WRITE_API", "stream": "exactly-once"},
            LoadMode(LoadKind.STORAGE_WRITE_API, stream=WriteStreamKind.EXACTLY_ONCE),
            id="exactly-once",
        ),
        pytest.param(
            {"mode": "STREAMING_INSERTS", "retry": True},
            LoadMode(LoadKind.STREAMING_INSERTS, retry=True),
            id="snowplow-streaming",
        ),
        pytest.param(
            {"mode": "FILE_LOADS", "frequency": 300},
            LoadMode(LoadKind.FILE_LOADS, frequency=300),
            id="snowplow-file-loads",
        ),
    ],
)
def test_load_modes_parse(load: dict[str, Any], expected: LoadMode) -> None:
    """Each accepted ``load`` block parses to its LoadMode."""
    assert expected == BigQueryConfig.parse(_with_load(load)).load


@pytest.mark.parametrize(
    "load",
    [
        pytest.param({"mode": "STORAGE_WRITE_API", "stream": "buffered"}, id="unknown-stream"),
        pytest.param(
            {"mode": "STREAMING_INSERTS", "retry": True, "stream": "default"}, id="stream-elsewhere"
        ),
    ],
)
def test_bad_stream_settings_are_refused(load: dict[str, Any]) -> None:
    """A stream outside STORAGE_WRITE_API, or an unknown stream, is a ConfigError naming load."""
    with pytest.raises(ConfigError) as raised:
        BigQueryConfig.parse(_with_load(load))
    assert str(raised.value).startswith("data.load")
