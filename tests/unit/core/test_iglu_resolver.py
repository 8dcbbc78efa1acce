"""Specification of the Iglu resolver: lookup order, failures, and the TTL + LRU cache."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from jsonschema import Draft4Validator
from plowline_core.errors import ConfigError, RegistryUnavailable
from plowline_core.iglu.config import (
    EmbeddedConnection,
    HttpConnection,
    RepositoryRef,
    ResolverConfig,
)
from plowline_core.iglu.key import SchemaKey
from plowline_core.iglu.resolver import LookupAttempt, ResolvedSchema, Resolver, SchemaNotFound
from plowline_core.testing.clock import FixedClock
from plowline_core.testing.registry import InMemoryRegistry

T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
ACME = SchemaKey.parse("iglu:com.acme/checkout_started/jsonschema/1-0-0")
OTHER = SchemaKey.parse("iglu:com.acme/other/jsonschema/1-0-0")
THIRD = SchemaKey.parse("iglu:com.acme/third/jsonschema/1-0-0")
SCHEMA = {"type": "object"}


def _ref(
    name: str, priority: float = 0, prefixes: tuple[str, ...] = (), embedded: bool = True
) -> RepositoryRef:
    connection = EmbeddedConnection(name) if embedded else HttpConnection(f"http://{name}")
    return RepositoryRef(name, priority, prefixes, connection)


def _registry(name: str, *keys: SchemaKey, failing: bool = False) -> InMemoryRegistry:
    return InMemoryRegistry(name, {key: {"title": name} for key in keys}, failing=failing)


def _resolver(*pairs: tuple[RepositoryRef, InMemoryRegistry], **options: Any) -> Resolver:
    return Resolver(list(pairs), options.pop("clock", FixedClock(T0)), **options)


def _winner(*pairs: tuple[RepositoryRef, InMemoryRegistry]) -> str:
    resolution = _resolver(*pairs).resolve(ACME)
    assert isinstance(resolution, ResolvedSchema)
    return resolution.repository


def test_resolves_from_the_repository_that_has_it() -> None:
    """The schema and the name of the repository it came from are returned."""
    resolver = _resolver((_ref("a"), _registry("a")), (_ref("b"), _registry("b", ACME)))
    assert ResolvedSchema(ACME, {"title": "b"}, "b") == resolver.resolve(ACME)


def test_lowest_priority_number_wins() -> None:
    """Among equal repositories, the lowest priority number is asked first."""
    expected = "low"
    assert expected == _winner(
        (_ref("high", 5), _registry("high", ACME)), (_ref("low", 1), _registry("low", ACME))
    )


def test_vendor_prefix_match_comes_before_priority() -> None:
    """A repository whose vendor prefix matches is asked before a better-priority one."""
    winner = _winner(
        (_ref("central", 0), _registry("central", ACME)),
        (_ref("acme", 9, ("com.acme",)), _registry("acme", ACME)),
    )
    expected = "acme"
    assert expected == winner


def test_vendor_prefix_is_a_prefix_match() -> None:
    """``com.ac`` matches the vendor ``com.acme`` (Iglu's startsWith rule)."""
    winner = _winner(
        (_ref("central", 0), _registry("central", ACME)),
        (_ref("acme", 9, ("com.ac",)), _registry("acme", ACME)),
    )
    expected = "acme"
    assert expected == winner


def test_embedded_comes_before_http() -> None:
    """An embedded repository is asked before an HTTP one with a better priority."""
    winner = _winner(
        (_ref("http", 0, embedded=False), _registry("http", ACME)),
        (_ref("embedded", 9), _registry("embedded", ACME)),
    )
    expected = "embedded"
    assert expected == winner


def test_ties_keep_config_order() -> None:
    """Repositories equal on every rule are asked in config order."""
    expected = "first"
    assert expected == _winner(
        (_ref("first"), _registry("first", ACME)), (_ref("second"), _registry("second", ACME))
    )


def test_later_repositories_are_not_asked_after_a_hit() -> None:
    """The first repository that has the schema wins; the rest are not asked."""
    later = _registry("later", ACME)
    _resolver((_ref("first"), _registry("first", ACME)), (_ref("later", 1), later)).resolve(ACME)
    expected = 0
    assert expected == later.lookups


def test_all_not_found_is_a_schema_not_found_value() -> None:
    """When every repository says not found, the history lists each in lookup order."""
    resolver = _resolver((_ref("b", 1), _registry("b")), (_ref("a", 0), _registry("a")))
    expected = SchemaNotFound(ACME, (LookupAttempt("a", 1, T0), LookupAttempt("b", 1, T0)))
    assert expected == resolver.resolve(ACME)


def test_iglu_central_is_not_added_implicitly() -> None:
    """Only the configured repositories are asked."""
    resolution = _resolver((_ref("only"), _registry("only"))).resolve(ACME)
    assert isinstance(resolution, SchemaNotFound)
    expected = ["only"]
    assert expected == [attempt.repository for attempt in resolution.lookup_history]


def test_to_failure_is_a_resolution_error() -> None:
    """A SchemaNotFound becomes the loader_iglu_error ResolutionError failure item."""
    expected = {
        "schemaKey": "iglu:com.acme/checkout_started/jsonschema/1-0-0",
        "error": {
            "error": "ResolutionError",
            "lookupHistory": [
                {
                    "repository": "a",
                    "errors": [{"error": "NotFound"}],
                    "attempts": 1,
                    "lastAttempt": "2024-05-01T12:00:00.000Z",
                }
            ],
        },
    }
    assert expected == SchemaNotFound(ACME, (LookupAttempt("a", 1, T0),)).to_failure()


def _bad_row_schema(conformance_dir: Path) -> dict[str, Any]:
    path = "badrows/com.snowplowanalytics.snowplow.badrows/loader_iglu_error/jsonschema/2-0-0"
    schema: dict[str, Any] = orjson.loads((conformance_dir / "vectors" / path).read_bytes())
    return schema


def test_to_failure_validates_as_loader_iglu_error(conformance_dir: Path) -> None:
    """A bad row carrying the failure item validates against loader_iglu_error/2-0-0."""
    resolution = _resolver((_ref("a"), _registry("a")), (_ref("b", 1), _registry("b"))).resolve(
        ACME
    )
    assert isinstance(resolution, SchemaNotFound)
    bad_row = {
        "processor": {"artifact": "plowline-loader", "version": "0.1.0"},
        "failure": [resolution.to_failure()],
        "payload": {
            "event_id": "c6ef3124-b53a-4b13-a233-0088f79dcbcb",
            "collector_tstamp": "2024-05-01T12:00:00Z",
        },
    }
    errors = [
        e.message for e in Draft4Validator(_bad_row_schema(conformance_dir)).iter_errors(bad_row)
    ]
    expected: list[str] = []
    assert expected == errors


def test_to_failure_matches_the_resolution_error_branch(conformance_dir: Path) -> None:
    """The error object validates against the ResolutionError branch itself, not another."""
    schema = _bad_row_schema(conformance_dir)
    branch = schema["properties"]["failure"]["items"]["anyOf"][0]["properties"]["error"]["anyOf"][0]
    failure = SchemaNotFound(ACME, (LookupAttempt("a", 1, T0),)).to_failure()
    expected: list[str] = []
    assert expected == [e.message for e in Draft4Validator(branch).iter_errors(failure["error"])]


def test_last_attempt_is_an_rfc3339_utc_timestamp() -> None:
    """lastAttempt reads like 2024-05-01T12:00:00.000Z whatever the input zone."""
    failure = SchemaNotFound(ACME, (LookupAttempt("a", 1, T0),)).to_failure()
    last = failure["error"]["lookupHistory"][0]["lastAttempt"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", last)


def test_a_failing_repository_without_a_hit_raises() -> None:
    """If none has it and one could not answer, RegistryUnavailable is raised, not a miss."""
    resolver = _resolver(
        (_ref("down"), _registry("down", failing=True)), (_ref("up", 1), _registry("up"))
    )
    with pytest.raises(RegistryUnavailable, match="down"):
        resolver.resolve(ACME)


def test_a_failing_repository_is_skipped_when_another_has_it() -> None:
    """A later repository's hit still wins over an earlier repository's failure."""
    resolver = _resolver(
        (_ref("down"), _registry("down", failing=True)), (_ref("up", 1), _registry("up", ACME))
    )
    assert ResolvedSchema(ACME, {"title": "up"}, "up") == resolver.resolve(ACME)


def test_failures_are_not_cached() -> None:
    """After an outage ends, the next resolve asks the registry again and succeeds."""
    registry = _registry("flaky", failing=True)
    resolver = _resolver((_ref("flaky"), registry))
    with pytest.raises(RegistryUnavailable):
        resolver.resolve(ACME)
    registry.failing = False
    registry.add(ACME, SCHEMA)
    assert ResolvedSchema(ACME, SCHEMA, "flaky") == resolver.resolve(ACME)


def test_hits_are_cached() -> None:
    """A second resolve of the same key does not ask the registry."""
    registry = _registry("a", ACME)
    resolver = _resolver((_ref("a"), registry))
    resolver.resolve(ACME)
    resolver.resolve(ACME)
    expected = 1
    assert expected == registry.lookups


def test_misses_are_cached() -> None:
    """A second resolve of a missing key does not ask the registry."""
    registry = _registry("a")
    resolver = _resolver((_ref("a"), registry), cache_ttl=60)
    resolver.resolve(ACME)
    resolver.resolve(ACME)
    expected = 1
    assert expected == registry.lookups


def test_cached_miss_ends_with_the_ttl() -> None:
    """A schema published after a miss is found once the TTL has passed."""
    clock = FixedClock(T0)
    registry = _registry("a")
    resolver = _resolver((_ref("a"), registry), clock=clock, cache_ttl=60)
    resolver.resolve(ACME)
    registry.add(ACME, SCHEMA)
    clock.advance(60)
    assert ResolvedSchema(ACME, SCHEMA, "a") == resolver.resolve(ACME)


def test_cached_entry_lives_until_the_ttl() -> None:
    """Just before the TTL the cached entry is still used."""
    clock = FixedClock(T0)
    registry = _registry("a", ACME)
    resolver = _resolver((_ref("a"), registry), clock=clock, cache_ttl=60)
    resolver.resolve(ACME)
    clock.advance(59.9)
    resolver.resolve(ACME)
    expected = 1
    assert expected == registry.lookups


def test_no_ttl_means_forever() -> None:
    """With cache_ttl None an entry is still used a year later."""
    clock = FixedClock(T0)
    registry = _registry("a", ACME)
    resolver = _resolver((_ref("a"), registry), clock=clock)
    resolver.resolve(ACME)
    clock.advance(365 * 86400)
    resolver.resolve(ACME)
    expected = 1
    assert expected == registry.lookups


def test_least_recently_used_is_evicted() -> None:
    """With room for two keys, the key not used for longest is the one looked up again."""
    registry = _registry("a", ACME, OTHER, THIRD)
    resolver = _resolver((_ref("a"), registry), cache_size=2)
    for key in (ACME, OTHER, ACME, THIRD, ACME, OTHER):
        resolver.resolve(key)
    expected = [ACME, OTHER, THIRD, OTHER]
    assert expected == registry.looked_up


def test_cache_size_zero_disables_the_cache() -> None:
    """cache_size 0 asks the registry every time."""
    registry = _registry("a", ACME)
    resolver = _resolver((_ref("a"), registry), cache_size=0)
    resolver.resolve(ACME)
    resolver.resolve(ACME)
    expected = 2
    assert expected == registry.lookups


def test_cache_hit_reads_the_clock_once() -> None:
    """A hit with a TTL costs one clock read (the loader resolves per entity)."""
    clock = FixedClock(T0)
    resolver = _resolver((_ref("a"), _registry("a", ACME)), clock=clock, cache_ttl=60)
    resolver.resolve(ACME)
    before = clock.reads
    resolver.resolve(ACME)
    expected = 1
    assert expected == clock.reads - before


def test_cache_hit_without_ttl_does_not_read_the_clock() -> None:
    """A hit with no TTL does not need the time at all."""
    clock = FixedClock(T0)
    resolver = _resolver((_ref("a"), _registry("a", ACME)), clock=clock)
    resolver.resolve(ACME)
    before = clock.reads
    resolver.resolve(ACME)
    expected = 0
    assert expected == clock.reads - before


def test_from_config_pairs_registries_by_name() -> None:
    """from_config uses the config's cache settings and the registry of each name."""
    config = ResolverConfig(10, 30.0, (_ref("a"),))
    resolver = Resolver.from_config(config, {"a": _registry("a", ACME)}, FixedClock(T0))
    assert ResolvedSchema(ACME, {"title": "a"}, "a") == resolver.resolve(ACME)


def test_from_config_without_a_registry_is_a_config_error() -> None:
    """A repository without a registry of its name is a ConfigError naming it."""
    config = ResolverConfig(10, None, (_ref("a"), _ref("b")))
    with pytest.raises(ConfigError, match=r"\['b'\]"):
        Resolver.from_config(config, {"a": _registry("a")}, FixedClock(T0))


def test_no_repositories_is_a_config_error() -> None:
    """A resolver without repositories could never resolve anything."""
    with pytest.raises(ConfigError, match="at least one repository"):
        Resolver([], FixedClock(T0))
