"""Specification of the Iglu resolver config parser."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import orjson
import pytest
from plowline_core.errors import ConfigError
from plowline_core.iglu.config import (
    EmbeddedConnection,
    HttpConnection,
    RepositoryRef,
    ResolverConfig,
)

URI = "iglu:com.snowplowanalytics.iglu/resolver-config/jsonschema/1-0-{}"


def _config(addition: int = 3, **data: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "cacheSize": 500,
        "repositories": [
            {
                "name": "Iglu Central",
                "priority": 0,
                "vendorPrefixes": ["com.snowplowanalytics"],
                "connection": {"http": {"uri": "http://iglucentral.com"}},
            },
            {
                "name": "local",
                "priority": 1,
                "vendorPrefixes": [],
                "connection": {"embedded": {"path": "iglu"}},
            },
        ],
    }
    body.update(data)
    return {"schema": URI.format(addition), "data": body}


def test_parses_repositories_in_config_order() -> None:
    """Each repository becomes a RepositoryRef with its connection."""
    expected = (
        RepositoryRef(
            "Iglu Central", 0, ("com.snowplowanalytics",), HttpConnection("http://iglucentral.com")
        ),
        RepositoryRef("local", 1, (), EmbeddedConnection("iglu")),
    )
    assert expected == ResolverConfig.parse(_config()).repositories


def test_cache_ttl_defaults_to_none() -> None:
    """Without cacheTtl cached entries never expire."""
    assert ResolverConfig.parse(_config()).cache_ttl is None


def test_cache_ttl_is_read_as_seconds() -> None:
    """cacheTtl is a float number of seconds."""
    expected = 600.0
    assert expected == ResolverConfig.parse(_config(cacheTtl=600)).cache_ttl


def test_cache_size_is_an_int() -> None:
    """cacheSize becomes an int even when written as a JSON float (allowed since 1-0-2)."""
    expected = 200
    assert expected == ResolverConfig.parse(_config(cacheSize=200.0)).cache_size


@pytest.mark.parametrize("addition", [0, 1, 2, 3], ids=lambda a: f"1-0-{a}")
def test_accepts_every_published_version(addition: int) -> None:
    """Versions 1-0-0 to 1-0-3 are accepted."""
    expected = 500
    assert expected == ResolverConfig.parse(_config(addition)).cache_size


def test_apikey_is_read() -> None:
    """An http connection keeps its apikey."""
    document = _config()
    document["data"]["repositories"][0]["connection"]["http"]["apikey"] = "secret"
    config = ResolverConfig.parse(document)
    assert HttpConnection("http://iglucentral.com", "secret") == config.repositories[0].connection


def test_apikey_is_hidden_from_repr() -> None:
    """The apikey never appears in a repr (logs, tracebacks)."""
    assert "secret" not in repr(HttpConnection("http://x", "secret"))


def test_iglu_central_example_is_accepted(test_data_dir: Path) -> None:
    """A config that validates against Iglu Central's own 1-0-3 schema parses."""
    schema = orjson.loads(
        (
            test_data_dir
            / "iglu-central/schemas/com.snowplowanalytics.iglu/resolver-config/jsonschema/1-0-3"
        ).read_bytes()
    )
    assert "cacheTtl" in schema["properties"]
    expected = 2
    assert expected == len(ResolverConfig.parse(_config(cacheTtl=0)).repositories)


def _error(document: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as caught:
        ResolverConfig.parse(document)
    return str(caught.value)


def _broken(path: list[str | int], value: Any, addition: int = 3) -> dict[str, Any]:
    document = copy.deepcopy(_config(addition))
    target: Any = document
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    return document


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        pytest.param(
            _broken(["data", "repositories", 1, "connection"], {"ftp": {"path": "x"}}),
            "data.repositories[1].connection: Additional properties are not allowed",
            id="unknown-connection",
        ),
        pytest.param(
            _broken(["data", "repositories", 1, "connection"], {}),
            "data.repositories[1].connection: {} should be non-empty",
            id="empty-connection",
        ),
        pytest.param(
            _broken(["data", "repositories", 0, "connection", "http", "uri"], "iglucentral.com"),
            "data.repositories[0].connection.http.uri: 'iglucentral.com' does not match",
            id="uri-without-scheme",
        ),
        pytest.param(
            _broken(["data", "repositories", 0, "priority"], "high"),
            "data.repositories[0].priority: 'high' is not of type 'number'",
            id="priority-not-number",
        ),
        pytest.param(
            _broken(["data", "cacheTtl"], 60, addition=1),
            "data: Additional properties are not allowed ('cacheTtl' was unexpected)",
            id="cache-ttl-before-1-0-2",
        ),
        pytest.param(
            _broken(["data", "repositories", 0, "connection", "http", "apikey"], "k", addition=0),
            "data.repositories[0].connection.http: Additional properties are not allowed",
            id="apikey-in-1-0-0",
        ),
        pytest.param(
            _broken(["data", "cacheSize"], -1),
            "data.cacheSize: -1 is not a non-negative integer",
            id="negative-cache-size",
        ),
        pytest.param(
            _broken(["data", "repositories", 1, "name"], "Iglu Central"),
            "data.repositories[1].name: 'Iglu Central' names two repositories",
            id="duplicate-name",
        ),
        pytest.param(
            _broken(["schema"], "iglu:com.acme/resolver-config/jsonschema/1-0-0"),
            "schema: expected one of iglu:com.snowplowanalytics.iglu/resolver-config/jsonschema/1-0-0",
            id="wrong-schema",
        ),
        pytest.param(
            _broken(["data"], None),
            "data: None is not of type 'object'",
            id="data-null",
        ),
    ],
)
def test_errors_name_the_offending_key(document: dict[str, Any], expected: str) -> None:
    """A ConfigError message starts with the key path of the mistake."""
    message = _error(document)
    assert message.startswith(expected), message


def test_missing_key_is_named() -> None:
    """A missing required key is named in the message."""
    document = _config()
    del document["data"]["repositories"][0]["vendorPrefixes"]
    expected = "data.repositories[0]: 'vendorPrefixes' is a required property"
    assert expected == _error(document)


def test_not_an_object_is_a_config_error() -> None:
    """A JSON array instead of an object is rejected with a ConfigError."""
    expected = "expected a self-describing JSON object, got list"
    assert expected == _error([])  # type: ignore[arg-type]
