"""The executors' WorkerConfig never shows the Iglu apikey in its repr."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

from plowline_core.schema.entity import ColumnMode
from plowline_loader.bootstrap import WorkerConfig, load_bigquery_config

APIKEY = "5c1a7e42-apikey-never-logged"
_RESOLVER = {
    "schema": "iglu:com.snowplowanalytics.iglu/resolver-config/jsonschema/1-0-3",
    "data": {
        "cacheSize": 500,
        "repositories": [
            {
                "name": "acme",
                "priority": 0,
                "vendorPrefixes": [],
                "connection": {"http": {"uri": "https://iglu.acme.com/api", "apikey": APIKEY}},
            }
        ],
    },
}
_CONFIG = {
    "schema": "iglu:com.snowplowanalytics.snowplow.storage/bigquery_config/jsonschema/1-0-0",
    "data": {
        "name": "repr test",
        "id": "31b1559d-d319-4023-aaae-97698238d808",
        "projectId": "p",
        "datasetId": "d",
        "tableId": "events",
        "input": "enriched-in",
        "typesTopic": "types",
        "typesSubscription": "types-sub",
        "badRows": "bad",
        "failedInserts": "failed",
        "load": {"mode": "STREAMING_INSERTS", "retry": False},
        "purpose": "ENRICHED_EVENTS",
    },
}


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
