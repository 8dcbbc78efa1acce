"""Specification of a key that only it fails: given up after a bound, not held for ever.

Notes:
    An HttpRegistry on httpx's MockTransport plays a registry that answers every key but
    one (400, or an HTML page with 200, for that one); the Resolver and the RowBuilder
    are the real ones, so the outcome is the bad row the loader writes.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import httpx
import orjson
import pytest
from jsonschema import Draft4Validator
from plowline_cloud.iglu import HttpRegistry
from plowline_core.badrows import IgluErrorRow, Processor
from plowline_core.errors import RegistryUnavailable
from plowline_core.iglu.config import HttpConnection, RepositoryRef
from plowline_core.iglu.key import SchemaKey
from plowline_core.iglu.resolver import (
    GIVE_UP_AFTER,
    GIVE_UP_AFTER_S,
    ResolvedSchema,
    Resolver,
    SchemaNotFound,
)
from plowline_core.testing.clock import FixedClock

T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
GOOD = SchemaKey.parse("iglu:com.acme/good/jsonschema/1-0-0")
BROKEN = SchemaKey.parse("iglu:com.acme/broken/jsonschema/1-0-0")
SCHEMA = {"type": "object", "properties": {"a": {"type": "string"}}}
SPACING_S = GIVE_UP_AFTER_S / (GIVE_UP_AFTER - 1)  # the bound's lookups span its time bound
BADROW_SCHEMA = "com.snowplowanalytics.snowplow.badrows/loader_iglu_error/jsonschema/2-0-0"


def _registry(broken: httpx.Response) -> HttpRegistry:
    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith(BROKEN.to_path()):
            return broken
        return httpx.Response(200, json=SCHEMA)

    transport = httpx.MockTransport(answer)
    return HttpRegistry("acme", "http://iglu.acme", transport=transport, sleep=lambda _: None)


class _Clocked(Resolver):
    """A Resolver over one repository, with the FixedClock it reads at hand."""

    def __init__(self, registry: HttpRegistry) -> None:
        self.clock = FixedClock(T0)
        ref = RepositoryRef("acme", 0, (), HttpConnection("http://iglu.acme"))
        super().__init__([(ref, registry)], self.clock)


def _resolver(registry: HttpRegistry) -> _Clocked:
    return _Clocked(registry)


def _fail(resolver: _Clocked, times: int, every_s: float = 0) -> None:
    """Look BROKEN up ``times`` times, each held, the clock moving ``every_s`` after each."""
    for _ in range(times):
        with pytest.raises(RegistryUnavailable):
            resolver.resolve(BROKEN)
        resolver.clock.advance(every_s)


ANSWERS = [
    pytest.param(httpx.Response(400, text="bad request"), id="400"),
    pytest.param(httpx.Response(200, text="<html>login</html>"), id="html-200"),
]


@pytest.mark.parametrize("broken", ANSWERS)
def test_a_key_only_it_fails_is_given_up_after_the_bound(broken: httpx.Response) -> None:
    """Held for GIVE_UP_AFTER - 1 lookups, then not found, as the registry answers others."""
    resolver = _resolver(_registry(broken))
    resolver.resolve(GOOD)
    _fail(resolver, GIVE_UP_AFTER - 1, SPACING_S)
    resolution = resolver.resolve(BROKEN)
    assert isinstance(resolution, SchemaNotFound)
    expected = [("acme", "RepoFailure", GIVE_UP_AFTER)]
    assert expected == [(a.repository, a.error, a.attempts) for a in resolution.lookup_history]


def test_quick_failures_are_held_until_the_time_bound() -> None:
    """Many failures within GIVE_UP_AFTER_S are still held (a registry's bad minute)."""
    resolver = _resolver(_registry(httpx.Response(400)))
    resolver.resolve(GOOD)
    _fail(resolver, 3 * GIVE_UP_AFTER, every_s=GIVE_UP_AFTER_S / (3 * GIVE_UP_AFTER + 1))


def test_a_registry_down_for_every_key_holds_the_key() -> None:
    """A registry that stops answering every key is an outage: the key is held past the bound."""
    state = {"down": False}

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(503) if state["down"] else httpx.Response(200, json=SCHEMA)

    transport = httpx.MockTransport(answer)
    registry = HttpRegistry("acme", "http://iglu.acme", transport=transport, sleep=lambda _: None)
    resolver = _resolver(registry)
    resolver.resolve(GOOD)
    state["down"] = True
    _fail(resolver, 3 * GIVE_UP_AFTER, SPACING_S)


def test_a_registry_that_answered_no_other_key_holds_the_key() -> None:
    """Without another key to ask, a failing key cannot be told from an outage: held."""
    resolver = _resolver(_registry(httpx.Response(400)))
    _fail(resolver, 3 * GIVE_UP_AFTER, SPACING_S)


def test_a_given_up_key_is_looked_up_again_after_its_ttl() -> None:
    """Once fixed in the registry, a given-up key resolves after at most GIVEN_UP_TTL."""
    fixed = {"broken": True}

    def answer(request: httpx.Request) -> httpx.Response:
        if fixed["broken"] and request.url.path.endswith(BROKEN.to_path()):
            return httpx.Response(400)
        return httpx.Response(200, json=SCHEMA)

    registry = HttpRegistry("acme", "http://iglu.acme", transport=httpx.MockTransport(answer))
    resolver = _resolver(registry)
    resolver.resolve(GOOD)
    _fail(resolver, GIVE_UP_AFTER - 1, SPACING_S)
    assert isinstance(resolver.resolve(BROKEN), SchemaNotFound)
    fixed["broken"] = False
    resolver.clock.advance(61)
    resolution = resolver.resolve(BROKEN)
    assert isinstance(resolution, ResolvedSchema)
    expected = SCHEMA
    assert expected == resolution.schema


def test_the_given_up_key_makes_a_valid_loader_iglu_error(iglu_central_dir: Path) -> None:
    """The bad row names the repository's RepoFailure with its error, and validates."""
    resolver = _resolver(_registry(httpx.Response(400, text="no")))
    resolver.resolve(GOOD)
    _fail(resolver, GIVE_UP_AFTER - 1, SPACING_S)
    resolution = resolver.resolve(BROKEN)
    assert isinstance(resolution, SchemaNotFound)
    row = IgluErrorRow([resolution.to_failure()], {"event_id": "x"})
    document = orjson.loads(row.to_json(Processor("plowline-loader", "0.1.0")))
    schema = orjson.loads((iglu_central_dir / "schemas" / BADROW_SCHEMA).read_bytes())
    errors = [e.message for e in Draft4Validator(schema).iter_errors(document["data"])]
    message = document["data"]["failure"][0]["error"]["lookupHistory"][0]["errors"][0]
    expected: tuple[list[str], str] = ([], "RepoFailure")
    assert expected == (errors, message["error"])
    assert "answered 400" in message["message"]
