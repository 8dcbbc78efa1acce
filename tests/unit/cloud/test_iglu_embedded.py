"""Specification of EmbeddedRegistry, with Iglu Central's checkout as the registry."""

from __future__ import annotations

import pickle
from datetime import UTC, datetime
from pathlib import Path

import pytest
from plowline_cloud.clock import SystemClock
from plowline_cloud.iglu import EmbeddedRegistry
from plowline_core.errors import ConfigError, RegistryUnavailable
from plowline_core.iglu.config import EmbeddedConnection, RepositoryRef
from plowline_core.iglu.key import SchemaKey
from plowline_core.iglu.resolver import ResolvedSchema, Resolver
from plowline_core.testing.clock import FixedClock

PAGE = SchemaKey.parse("iglu:com.snowplowanalytics.snowplow/web_page/jsonschema/1-0-0")
ABSENT = SchemaKey.parse("iglu:com.snowplowanalytics.snowplow/web_page/jsonschema/9-0-0")
UNKNOWN_VENDOR = SchemaKey.parse("iglu:com.acme.nobody/thing/jsonschema/1-0-0")


def test_reads_a_schema_from_iglu_central(iglu_central_dir: Path) -> None:
    """The schema at schemas/vendor/name/format/version is returned as a dict."""
    schema = EmbeddedRegistry("central", iglu_central_dir).lookup(PAGE)
    assert schema is not None
    assert {
        "vendor": PAGE.vendor,
        "name": PAGE.name,
        "format": "jsonschema",
        "version": "1-0-0",
    } == schema["self"]


@pytest.mark.parametrize("key", [ABSENT, UNKNOWN_VENDOR], ids=["absent-version", "absent-vendor"])
def test_missing_schema_is_none(iglu_central_dir: Path, key: SchemaKey) -> None:
    """A key without a file is not found (None), not an error."""
    assert EmbeddedRegistry("central", iglu_central_dir).lookup(key) is None


def test_path_must_be_a_directory(tmp_path: Path) -> None:
    """A registry path that is not a directory is a ConfigError naming the repository."""
    with pytest.raises(ConfigError, match="embedded repository 'local'"):
        EmbeddedRegistry("local", tmp_path / "missing")


def _write(root: Path, key: SchemaKey, content: bytes) -> None:
    location = root / "schemas" / key.to_path()
    location.parent.mkdir(parents=True)
    location.write_bytes(content)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        pytest.param(b"{oops", "is not JSON", id="invalid-json"),
        pytest.param(b"[]", "is not a JSON object", id="array"),
    ],
)
def test_unreadable_schema_is_unavailable(tmp_path: Path, content: bytes, expected: str) -> None:
    """A schema file that is not a JSON object makes the registry unavailable."""
    _write(tmp_path, PAGE, content)
    with pytest.raises(RegistryUnavailable, match=expected):
        EmbeddedRegistry("local", tmp_path).lookup(PAGE)


def test_pickles(iglu_central_dir: Path) -> None:
    """An unpickled copy reads the same directory."""
    copy = pickle.loads(pickle.dumps(EmbeddedRegistry("central", iglu_central_dir)))
    assert EmbeddedRegistry("central", iglu_central_dir).lookup(PAGE) == copy.lookup(PAGE)


def test_resolver_over_iglu_central(iglu_central_dir: Path) -> None:
    """A Resolver over the embedded Iglu Central resolves a real schema."""
    ref = RepositoryRef(
        "central", 0, ("com.snowplowanalytics",), EmbeddedConnection(str(iglu_central_dir))
    )
    resolver = Resolver(
        [(ref, EmbeddedRegistry("central", iglu_central_dir))], FixedClock(datetime.now(UTC))
    )
    resolution = resolver.resolve(PAGE)
    assert isinstance(resolution, ResolvedSchema)
    expected = ("central", "web_page")
    assert expected == (resolution.repository, resolution.schema["self"]["name"])


def test_system_clock_is_aware_utc() -> None:
    """SystemClock returns timezone-aware UTC times."""
    expected = UTC
    assert expected == SystemClock().now().tzinfo
