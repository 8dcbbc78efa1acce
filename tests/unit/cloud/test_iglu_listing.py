"""Listing a model's versions: embedded directories, Iglu Server, and static registries."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import orjson
from plowline_cloud.iglu import EmbeddedRegistry
from plowline_cloud.iglu.remote import HttpRegistry
from plowline_core.iglu.config import EmbeddedConnection, HttpConnection, RepositoryRef
from plowline_core.iglu.key import SchemaKey, SchemaVer
from plowline_core.iglu.resolver import Resolver
from plowline_core.testing.clock import FixedClock

SCHEMA = {"type": "object", "properties": {"a": {"type": "string"}}}


def _embedded(root: Path, versions: list[str]) -> EmbeddedRegistry:
    folder = root / "schemas" / "com.acme" / "shoe" / "jsonschema"
    folder.mkdir(parents=True)
    for version in versions:
        (folder / version).write_bytes(orjson.dumps(SCHEMA))
    return EmbeddedRegistry("local", root)


def _http(answer: httpx.Response) -> tuple[HttpRegistry, list[str]]:
    seen: list[str] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        return answer

    transport = httpx.MockTransport(handle)
    return HttpRegistry("server", "https://iglu.acme.com/api", transport=transport), seen


def test_embedded_lists_the_models_files(tmp_path: Path) -> None:
    """An embedded repository lists the files of the model, other models and names ignored."""
    registry = _embedded(tmp_path, ["1-0-0", "1-1-0", "2-0-0", "notes.txt"])
    expected = [SchemaVer(1, 0, 0), SchemaVer(1, 1, 0)]
    assert expected == registry.list_versions("com.acme", "shoe", "jsonschema", 1)


def test_embedded_lists_nothing_for_an_unknown_model(tmp_path: Path) -> None:
    """A model without a folder has no versions."""
    assert _embedded(tmp_path, []).list_versions("com.acme", "boot", "jsonschema", 1) == []


def test_iglu_server_lists_the_model_uris() -> None:
    """Iglu Server's list answer gives the model's versions; the URL is the list endpoint."""
    uris = ["iglu:com.acme/shoe/jsonschema/1-0-1", "iglu:com.acme/shoe/jsonschema/1-0-0"]
    registry, seen = _http(httpx.Response(200, json=uris))
    versions = registry.list_versions("com.acme", "shoe", "jsonschema", 1)
    expected = (
        [SchemaVer(1, 0, 0), SchemaVer(1, 0, 1)],
        ["https://iglu.acme.com/api/schemas/com.acme/shoe/jsonschema/1"],
    )
    assert expected == (versions, seen)


def test_static_registry_cannot_list() -> None:
    """A static registry answers 404 to the list URL: None, it cannot list."""
    registry, _ = _http(httpx.Response(404))
    assert registry.list_versions("com.acme", "shoe", "jsonschema", 1) is None


def test_resolver_uses_the_listing(tmp_path: Path) -> None:
    """versions_up_to takes the listed versions up to the key, from a listing repository."""
    registry = _embedded(tmp_path, ["1-0-0", "1-0-2", "1-1-0"])
    ref = RepositoryRef("local", 0, (), EmbeddedConnection(str(tmp_path)))
    resolver = Resolver([(ref, registry)], FixedClock(datetime(2026, 1, 1, tzinfo=UTC)))
    key = SchemaKey.parse("iglu:com.acme/shoe/jsonschema/1-0-2")
    assert (SchemaVer(1, 0, 0), SchemaVer(1, 0, 2)) == resolver.versions_up_to(key)


def test_resolver_probes_when_no_repository_lists() -> None:
    """With only a static registry, versions are found by looking them up in order."""
    registry, seen = _http(httpx.Response(404))
    ref = RepositoryRef("server", 0, (), HttpConnection("https://iglu.acme.com/api", None))
    resolver = Resolver([(ref, registry)], FixedClock(datetime(2026, 1, 1, tzinfo=UTC)))
    key = SchemaKey.parse("iglu:com.acme/shoe/jsonschema/1-0-1")
    assert resolver.versions_up_to(key) == ()
    assert "https://iglu.acme.com/api/schemas/com.acme/shoe/jsonschema/1-0-0" in seen


class _CountingListing(EmbeddedRegistry):
    """An embedded registry that counts its listings."""

    calls = 0

    def list_versions(self, vendor: str, name: str, format: str, model: int) -> Any:
        """Count, then list."""
        type(self).calls += 1
        return super().list_versions(vendor, name, format, model)


def test_listing_is_cached_until_a_newer_version_appears(tmp_path: Path) -> None:
    """A second key of the model reuses the listing; a version the listing lacks lists again."""
    _embedded(tmp_path, ["1-0-0", "1-0-1"])
    registry = _CountingListing("local", tmp_path)
    ref = RepositoryRef("local", 0, (), EmbeddedConnection(str(tmp_path)))
    resolver = Resolver([(ref, registry)], FixedClock(datetime(2026, 1, 1, tzinfo=UTC)))
    resolver.versions_up_to(SchemaKey.parse("iglu:com.acme/shoe/jsonschema/1-0-1"))
    resolver.versions_up_to(SchemaKey.parse("iglu:com.acme/shoe/jsonschema/1-0-0"))
    cached = _CountingListing.calls
    folder = tmp_path / "schemas" / "com.acme" / "shoe" / "jsonschema"
    (folder / "1-1-0").write_bytes(orjson.dumps(SCHEMA))
    newer = resolver.versions_up_to(SchemaKey.parse("iglu:com.acme/shoe/jsonschema/1-1-0"))
    assert (1, 2, SchemaVer(1, 1, 0)) == (cached, _CountingListing.calls, newer[-1])
