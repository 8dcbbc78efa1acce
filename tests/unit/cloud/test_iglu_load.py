"""Specification of load_resolver and registries_from_config, with the devstack examples."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from plowline_cloud.iglu import (
    EmbeddedRegistry,
    HttpRegistry,
    load_resolver,
    registries_from_config,
)
from plowline_core.errors import ConfigError
from plowline_core.iglu.config import ResolverConfig
from plowline_core.iglu.key import SchemaKey
from plowline_core.iglu.resolver import ResolvedSchema
from plowline_core.testing.clock import FixedClock
from structlog.testing import capture_logs
from support.configs import embedded, resolver_config

EXAMPLES = Path(__file__).resolve().parents[3] / "libs/devstack/src/plowline_devstack/examples"
EXAMPLE_KEYS = [
    "iglu:com.snowplowanalytics.snowplow/web_page/jsonschema/1-0-0",
    "iglu:com.snowplowanalytics.snowplow/ua_parser_context/jsonschema/1-0-0",
    "iglu:com.snowplowanalytics.snowplow/link_click/jsonschema/1-0-0",
    "iglu:com.snowplowanalytics.snowplow/link_click/jsonschema/1-0-1",
    "iglu:com.acme/checkout_started/jsonschema/1-0-0",
]
CLOCK = FixedClock(datetime(2024, 5, 1, tzinfo=UTC))


def _resolver_json(path: str, **extra: Any) -> dict[str, Any]:
    config = resolver_config(embedded(path), cache_size=10, cache_ttl=None)
    config["data"].update(extra)
    return config


@pytest.mark.parametrize("uri", EXAMPLE_KEYS)
def test_example_resolver_resolves_the_example_schemas(uri: str) -> None:
    """The devstack resolver.json resolves each shipped schema, whose `self` matches its key."""
    key = SchemaKey.parse(uri)
    resolution = load_resolver(EXAMPLES / "resolver.json", CLOCK).resolve(key)
    assert isinstance(resolution, ResolvedSchema)
    self_ = resolution.schema["self"]
    assert uri == f"iglu:{self_['vendor']}/{self_['name']}/{self_['format']}/{self_['version']}"


def test_relative_embedded_path_is_relative_to_the_resolver_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A relative embedded path is found from the file's directory, whatever the working directory."""
    (tmp_path / "conf" / "iglu" / "schemas").mkdir(parents=True)
    (tmp_path / "conf" / "resolver.json").write_bytes(orjson.dumps(_resolver_json("iglu")))
    monkeypatch.chdir(tmp_path)
    config = ResolverConfig.parse(_resolver_json("iglu"))
    registry = registries_from_config(config, tmp_path / "conf")["local"]
    assert isinstance(registry, EmbeddedRegistry)
    assert tmp_path / "conf" / "iglu" / "schemas" == registry.root


def test_absolute_embedded_path_is_kept(iglu_central_dir: Path) -> None:
    """An absolute embedded path does not depend on the base directory."""
    config = ResolverConfig.parse(_resolver_json(str(iglu_central_dir)))
    registry = registries_from_config(config, Path("/nonexistent"))["local"]
    assert isinstance(registry, EmbeddedRegistry)
    assert iglu_central_dir.resolve() / "schemas" == registry.root


def test_http_repositories_become_http_registries() -> None:
    """An http connection becomes an HttpRegistry on its uri."""
    document = _resolver_json("x")
    document["data"]["repositories"][0]["connection"] = {"http": {"uri": "http://127.0.0.1:1/api"}}
    registry = registries_from_config(ResolverConfig.parse(document), Path("."))["local"]
    assert isinstance(registry, HttpRegistry)
    expected = "http://127.0.0.1:1/api"
    assert expected == registry.uri
    registry.close()


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        pytest.param(
            "http://iglucentral.com", ["iglu registry over plain http: use https"], id="http"
        ),
        pytest.param("https://iglucentral.com", [], id="https"),
    ],
)
def test_a_plain_http_repository_is_warned_about(uri: str, expected: list[str]) -> None:
    """A registry over plain http is logged as a warning naming it; https is not."""
    document = _resolver_json("x")
    document["data"]["repositories"][0]["connection"] = {"http": {"uri": uri}}
    with capture_logs() as logs:
        registries = registries_from_config(ResolverConfig.parse(document), Path("."))
    for registry in registries.values():
        assert isinstance(registry, HttpRegistry)
        registry.close()
    assert expected == [log["event"] for log in logs if log.get("registry") == "local"]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        pytest.param(None, "no such file, and not base64 either", id="missing-file"),
        pytest.param(b"{oops", "neither JSON nor HOCON", id="not-json"),
        pytest.param(
            orjson.dumps(_resolver_json("iglu", cacheSize="big")),
            "data.cacheSize: 'big'",
            id="invalid",
        ),
        pytest.param(
            orjson.dumps(_resolver_json("nowhere")),
            "embedded repository 'local'",
            id="no-directory",
        ),
    ],
)
def test_problems_are_config_errors_naming_the_file(
    tmp_path: Path, content: bytes | None, expected: str
) -> None:
    """Every problem with the file is a ConfigError starting with the flag and naming the path."""
    path = tmp_path / "resolver.json"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(ConfigError) as caught:
        load_resolver(path, CLOCK)
    assert str(caught.value).startswith(f"--resolver {path}"), str(caught.value)
    assert expected in str(caught.value)
