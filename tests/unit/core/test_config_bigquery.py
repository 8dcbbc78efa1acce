"""Specification of the Snowplow bigquery_config parser."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import orjson
import pytest
from jsonschema import Draft4Validator
from plowline_core.config import BigQueryConfig, LoadKind, LoadMode
from plowline_core.errors import ConfigError
from support.configs import bigquery_config

EXAMPLE = (
    Path(__file__).resolve().parents[3] / "libs/devstack/src/plowline_devstack/examples/config.json"
)
DOCUMENT: dict[str, Any] = bigquery_config(
    name="Snowplow BigQuery",
    project="acme-analytics",
    dataset="atomic",
    input="enriched-good-sub",
    types_topic="bq-types",
    types_subscription="bq-types-sub",
    bad_rows="bq-bad-rows",
    failed_inserts="bq-failed-inserts",
)


def _with(path: list[str], value: Any) -> dict[str, Any]:
    document = copy.deepcopy(DOCUMENT)
    target: Any = document
    for part in path[:-1]:
        target = target[part]
    if value is None:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return document


def _error(document: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as caught:
        BigQueryConfig.parse(document)
    return str(caught.value)


def test_parses_every_field_in_snake_case() -> None:
    """Each camelCase key becomes a snake_case attribute."""
    expected = BigQueryConfig(
        name="Snowplow BigQuery",
        id="31b1559d-d319-4023-aaae-97698238d808",
        project_id="acme-analytics",
        dataset_id="atomic",
        table_id="events",
        input="enriched-good-sub",
        types_topic="bq-types",
        types_subscription="bq-types-sub",
        bad_rows="bq-bad-rows",
        failed_inserts="bq-failed-inserts",
        load=LoadMode(LoadKind.STREAMING_INSERTS, retry=False),
        purpose="ENRICHED_EVENTS",
    )
    assert expected == BigQueryConfig.parse(DOCUMENT)


def test_file_loads_keeps_its_frequency() -> None:
    """FILE_LOADS mode carries its frequency in seconds."""
    document = _with(["data", "load"], {"mode": "FILE_LOADS", "frequency": 300})
    assert LoadMode(LoadKind.FILE_LOADS, frequency=300) == BigQueryConfig.parse(document).load


def test_table_ref_joins_project_dataset_and_table() -> None:
    """table_ref is project.dataset.table."""
    expected = "acme-analytics.atomic.events"
    assert expected == BigQueryConfig.parse(DOCUMENT).table_ref


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        pytest.param(
            _with(["data", "load", "mode"], "FOO"),
            "data.load.mode: 'FOO' is not one of ['STREAMING_INSERTS', 'FILE_LOADS', 'STORAGE_WRITE_API']",
            id="unknown-mode",
        ),
        pytest.param(
            _with(["data", "load", "retry"], None),
            "data.load: 'retry' is a required property",
            id="streaming-without-retry",
        ),
        pytest.param(
            _with(["data", "load"], {"mode": "FILE_LOADS", "frequency": 10}),
            "data.load.frequency: 10 is less than the minimum of 100",
            id="frequency-too-small",
        ),
        pytest.param(
            _with(["data", "id"], "not-a-uuid"),
            "data.id: 'not-a-uuid' is not a 'uuid'",
            id="id-not-uuid",
        ),
        pytest.param(
            _with(["data", "input"], "ab"),
            "data.input: 'ab' is too short",
            id="input-too-short",
        ),
        pytest.param(
            _with(["data", "purpose"], "JSON"),
            "data.purpose: 'JSON' is not one of ['ENRICHED_EVENTS']",
            id="wrong-purpose",
        ),
        pytest.param(
            _with(["data", "tableId"], None),
            "data: 'tableId' is a required property",
            id="missing-table",
        ),
        pytest.param(
            _with(["data", "extra"], 1),
            "data: Additional properties are not allowed ('extra' was unexpected)",
            id="unknown-key",
        ),
        pytest.param(
            _with(
                ["schema"],
                "iglu:com.snowplowanalytics.snowplow.storage/bigquery_config/jsonschema/2-0-0",
            ),
            "schema: expected one of iglu:com.snowplowanalytics.snowplow.storage/bigquery_config/jsonschema/1-0-0",
            id="unknown-version",
        ),
    ],
)
def test_errors_name_the_offending_key(document: dict[str, Any], expected: str) -> None:
    """A ConfigError message starts with the path of the wrong key."""
    message = _error(document)
    assert message.startswith(expected), message


def test_several_errors_are_all_reported() -> None:
    """Two mistakes are both named, in path order."""
    document = _with(["data", "purpose"], "JSON")
    document["data"]["datasetId"] = 7
    expected = 2
    assert expected == _error(document).count("; ") + 1


def test_example_config_parses() -> None:
    """The local-stack example config shipped with devstack is valid."""
    config = BigQueryConfig.parse(orjson.loads(EXAMPLE.read_bytes()))
    expected = "events"
    assert expected == config.table_id


def test_example_config_is_valid_for_iglu_central(test_data_dir: Path) -> None:
    """The example config validates against Iglu Central's own bigquery_config schema."""
    schema_path = "iglu-central/schemas/com.snowplowanalytics.snowplow.storage/bigquery_config/jsonschema/1-0-0"
    schema = orjson.loads((test_data_dir / schema_path).read_bytes())
    data = orjson.loads(EXAMPLE.read_bytes())["data"]
    expected: list[str] = []
    assert expected == [e.message for e in Draft4Validator(schema).iter_errors(data)]
