"""The executors' WorkerConfig never shows the Iglu apikey in its repr."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

from plowline_core.schema.entity import ColumnMode
from plowline_loader.bootstrap import WorkerConfig, load_bigquery_config
from support.configs import bigquery_config, http, resolver_config

APIKEY = "5c1a7e42-apikey-never-logged"
_RESOLVER = resolver_config(
    http("https://iglu.acme.com/api", name="acme", apikey=APIKEY), cache_size=500, cache_ttl=None
)
_CONFIG = bigquery_config(name="repr test")


def _config(tmp_path: Path) -> WorkerConfig:
    config_file = tmp_path / "config.json"
    config_file.write_text(json.dumps(_CONFIG))
    bigquery = load_bigquery_config(config_file)
    return WorkerConfig(bigquery, json.dumps(_RESOLVER), str(tmp_path), ColumnMode.FULL, "0")


def test_the_repr_leaves_the_apikey_out(tmp_path: Path) -> None:
    """repr() and str() of a WorkerConfig (logs, Spark's task errors) hold no apikey."""
    config = _config(tmp_path)
    expected = (False, False)
    assert expected == (APIKEY in repr(config), APIKEY in str(config))


def test_the_apikey_still_travels_to_the_executors(tmp_path: Path) -> None:
    """The resolver config, apikey and all, survives pickling: only the repr leaves it out."""
    config = _config(tmp_path)
    expected = config.resolver_json
    assert expected == pickle.loads(pickle.dumps(config)).resolver_json
