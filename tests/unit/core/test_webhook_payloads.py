"""2.x's webhook payloads and setup-error detection (plowline_core.webhook).

The payloads are checked against the Iglu Central schemas they name, carried in
tests/data/iglu-central (Apache-2.0).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st
from plowline_core.errors import ConfigError
from plowline_core.webhook import (
    ALERT_SCHEMA,
    HEARTBEAT_SCHEMA,
    SetupProblem,
    WebhookSettings,
    alert_message,
    alert_payload,
    heartbeat_payload,
    parse_tags,
    setup_problem,
)

IGLU_CENTRAL = Path(__file__).resolve().parents[2] / "data" / "iglu-central" / "schemas"


def _errors(payload: dict[str, Any]) -> list[str]:
    """Validate a self-describing payload's data against the schema its URI names."""
    vendor, name, _format, version = payload["schema"].removeprefix("iglu:").split("/")
    schema = json.loads((IGLU_CENTRAL / vendor / name / "jsonschema" / version).read_text())
    validator = jsonschema.Draft4Validator(schema)
    return sorted(e.message for e in validator.iter_errors(payload["data"]))


def test_alert_payload_is_valid_against_its_iglu_schema() -> None:
    """An alert is the self-describing JSON 2.x sends, valid against alert 1-0-0."""
    payload = alert_payload("plowline-loader", "1.2.3", "table missing", {"pipeline": "prod"})
    expected = (ALERT_SCHEMA, [], "table missing")
    assert expected == (payload["schema"], _errors(payload), payload["data"]["message"])


def test_heartbeat_payload_is_valid_against_its_iglu_schema() -> None:
    """A heartbeat is the self-describing JSON 2.x sends, valid against heartbeat 1-0-0."""
    payload = heartbeat_payload("plowline-loader", "1.2.3", {"pipeline": "prod"})
    expected = (HEARTBEAT_SCHEMA, [], {"appName", "appVersion", "tags"})
    assert expected == (payload["schema"], _errors(payload), set(payload["data"]))


@given(
    name=st.text(max_size=200),
    version=st.text(max_size=200),
    message=st.text(max_size=6000),
    tags=st.dictionaries(st.text(max_size=20), st.text(max_size=50), max_size=5),
)
def test_any_values_give_schema_valid_payloads(
    name: str, version: str, message: str, tags: dict[str, str]
) -> None:
    """Whatever the names, message and tags, both payloads stay valid (long values are cut)."""
    payloads = [alert_payload(name, version, message, tags), heartbeat_payload(name, version, tags)]
    expected: list[list[str]] = [[], []]
    assert expected == [_errors(p) for p in payloads]


@pytest.mark.parametrize(
    ("error", "problem"),
    [
        pytest.param(
            "PermanentError: 404 POST https://bigquery.googleapis.com/…/insertAll: "
            "Not found: Table acme:snowplow.events",
            SetupProblem.TABLE_MISSING,
            id="table-missing",
        ),
        pytest.param(
            "PermanentError: 404 Not found: Dataset acme:snowplow",
            SetupProblem.TABLE_MISSING,
            id="dataset-missing",
        ),
        pytest.param(
            "PermanentError: 403 Access Denied: Table acme:snowplow.events: Permission "
            "bigquery.tables.updateData denied",
            SetupProblem.NO_ACCESS,
            id="no-table-access",
        ),
        pytest.param(
            "PermanentError: 403 User not authorized to perform this action. PERMISSION_DENIED",
            SetupProblem.NO_ACCESS,
            id="pubsub-permission-denied",
        ),
        pytest.param(
            "PermanentError: 400 Too many total leaf fields: 10001, max allowed field count: 10000",
            SetupProblem.COLUMNS_NOT_ADDED,
            id="too-many-columns",
        ),
        pytest.param(
            "TransientError: 403 Exceeded rate limits: rateLimitExceeded",
            None,
            id="throttling-403-is-not-access",
        ),
        pytest.param(
            "RegistryUnavailable: cannot resolve iglu:com.acme/x/jsonschema/1-0-0",
            None,
            id="registry-outage",
        ),
        pytest.param("TransientError: 503 Service Unavailable", None, id="server-error"),
    ],
)
def test_setup_problem_names_the_errors_an_operator_must_fix(
    error: str, problem: SetupProblem | None
) -> None:
    """Table or dataset missing, access refused, columns refused: setup errors; the rest not."""
    expected = problem
    assert expected == setup_problem(error)


def test_alert_message_keeps_the_line_that_shows_the_problem() -> None:
    """Of a Spark task's page of failure, the alert keeps the problem and its one line."""
    error = (
        "Py4JJavaError: An error occurred while calling o123.collect.\n"
        "  File worker.py, line 1\n"
        "plowline_core.errors.PermanentError: 404 Not found: Table acme:snowplow.events\n"
        "\tat org.apache.spark.api.python.PythonRunner"
    )
    expected = (
        "the events table does not exist: "
        "plowline_core.errors.PermanentError: 404 Not found: Table acme:snowplow.events"
    )
    assert expected == alert_message(SetupProblem.TABLE_MISSING, error)


@pytest.mark.parametrize(
    ("text", "tags"),
    [
        pytest.param("", {}, id="empty"),
        pytest.param("pipeline=prod", {"pipeline": "prod"}, id="one"),
        pytest.param(" a = 1 , b=x=y ,", {"a": "1", "b": "x=y"}, id="spaces-and-equals"),
    ],
)
def test_parse_tags_reads_name_value_pairs(text: str, tags: dict[str, str]) -> None:
    """``name=value,…`` becomes the tags dict; a value may hold ``=``."""
    expected = tags
    assert expected == parse_tags(text)


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda: parse_tags("pipeline"), id="tag-without-equals"),
        pytest.param(lambda: WebhookSettings("webhook.acme.com"), id="endpoint-not-a-url"),
        pytest.param(lambda: WebhookSettings("https://acme.com", {}, 0), id="heartbeat-zero"),
    ],
)
def test_bad_webhook_settings_are_config_errors(make: Any) -> None:
    """A malformed tag, endpoint or heartbeat is a ConfigError, not a silent non-sender."""
    with pytest.raises(ConfigError):
        make()
