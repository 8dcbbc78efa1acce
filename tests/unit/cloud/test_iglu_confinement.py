"""Specification of the registries' confinement: no lookup reads or asks outside schemas/.

Notes:
    ``SchemaKey`` refuses a vendor of dots only (tests/unit/core/test_iglu_key_parts.py);
    these tests hand each registry a key that slipped past it (built without its checks),
    to show the registry holds the line on its own: nothing is read, nothing is sent.
"""

from __future__ import annotations

from pathlib import Path

import httpx
from plowline_cloud.iglu import EmbeddedRegistry, HttpRegistry
from plowline_core.iglu.key import SchemaKey, SchemaVer

SECRET = {"self": {"vendor": "secret"}, "type": "object"}


def _unchecked_key(vendor: str, name: str) -> SchemaKey:
    """Return a SchemaKey built without ``__post_init__`` (what a bug elsewhere could make)."""
    key = object.__new__(SchemaKey)
    for part, value in (("vendor", vendor), ("name", name), ("format", "jsonschema")):
        object.__setattr__(key, part, value)
    object.__setattr__(key, "version", SchemaVer(1, 0, 0))
    return key


def test_http_registry_sends_nothing_for_a_key_that_climbs_out() -> None:
    """A vendor ``..`` is not sent (httpx would send /api/secret/…): no request, no apikey."""
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=SECRET)

    transport = httpx.MockTransport(answer)
    with HttpRegistry("acme", "https://iglu.acme.com/api", "s3cret", transport=transport) as r:
        found = r.lookup(_unchecked_key("..", "secret"))
    expected: tuple[None, list[str]] = (None, [])
    assert expected == (found, [request.url.path for request in seen])


def test_http_registry_still_asks_for_a_plain_key() -> None:
    """A plain key is asked at exactly ``{uri}/schemas/{vendor}/{name}/{format}/{version}``."""
    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.path)
        return httpx.Response(200, json=SECRET)

    transport = httpx.MockTransport(answer)
    with HttpRegistry("acme", "https://iglu.acme.com/api", transport=transport) as registry:
        registry.lookup(SchemaKey.parse("iglu:com.acme/checkout/jsonschema/1-0-0"))
    expected = ["/api/schemas/com.acme/checkout/jsonschema/1-0-0"]
    assert expected == seen


def test_embedded_registry_reads_nothing_outside_schemas(tmp_path: Path) -> None:
    """A vendor ``..`` does not read ``{path}/secret/jsonschema/1-0-0`` beside schemas/."""
    outside = tmp_path / "secret" / "jsonschema" / "1-0-0"
    outside.parent.mkdir(parents=True)
    outside.write_text('{"type": "object"}')
    (tmp_path / "schemas").mkdir()
    registry = EmbeddedRegistry("local", tmp_path)
    assert registry.lookup(_unchecked_key("..", "secret")) is None


def test_embedded_registry_under_a_relative_path_still_reads(tmp_path: Path) -> None:
    """A registry path that itself holds ``..`` still reads its own schemas."""
    key = SchemaKey.parse("iglu:com.acme/checkout/jsonschema/1-0-0")
    location = tmp_path / "reg" / "schemas" / key.to_path()
    location.parent.mkdir(parents=True)
    location.write_text('{"type": "object"}')
    (tmp_path / "other").mkdir()
    registry = EmbeddedRegistry("local", tmp_path / "other" / ".." / "reg")
    expected = {"type": "object"}
    assert expected == registry.lookup(key)
