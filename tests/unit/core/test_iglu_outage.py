"""Specification of the resolver's outage ledger: which repository fails, since when, and why."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from plowline_core.errors import RegistryUnavailable
from plowline_core.iglu.config import HttpConnection, RepositoryRef
from plowline_core.iglu.key import SchemaKey
from plowline_core.iglu.outage import OutageLedger, RegistryOutage
from plowline_core.iglu.resolver import ResolvedSchema, Resolver, SchemaNotFound
from plowline_core.testing.clock import FixedClock
from plowline_core.testing.registry import InMemoryRegistry

T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
KEY = SchemaKey.parse("iglu:com.acme/checkout_started/jsonschema/1-0-0")
OTHER = SchemaKey.parse("iglu:com.acme/other/jsonschema/1-0-0")
ERROR = "flaky is failing (test double)"


class _Listener:
    """Records the transitions it is told of."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, int]] = []

    def outage_started(self, outage: RegistryOutage) -> None:
        self.seen.append(("started", outage.repository, outage.failures))

    def outage_ended(self, outage: RegistryOutage, now: datetime) -> None:
        self.seen.append(("ended", outage.repository, outage.failures))


def _setup(
    listener: _Listener | None = None,
) -> tuple[Resolver, InMemoryRegistry, InMemoryRegistry, FixedClock]:
    flaky = InMemoryRegistry("flaky", failing=True)
    good = InMemoryRegistry("good")
    clock = FixedClock(T0)
    pairs = [
        (RepositoryRef("flaky", 0, (), HttpConnection("https://flaky")), flaky),
        (RepositoryRef("good", 1, (), HttpConnection("https://good")), good),
    ]
    return Resolver(pairs, clock, cache_size=0, outages=OutageLedger(listener)), flaky, good, clock


def test_a_failing_repository_is_in_the_ledger_with_since_and_error() -> None:
    """After two failed lookups the outage names the repository, its start and last error."""
    resolver, _, _, clock = _setup()
    for _ in range(2):
        with pytest.raises(RegistryUnavailable):
            resolver.resolve(KEY)
        clock.advance(30)
    expected = (RegistryOutage("flaky", T0, T0.replace(second=30), ERROR, failures=2),)
    assert expected == resolver.outages.current()


def test_the_raised_error_carries_the_outages_of_the_lookup() -> None:
    """RegistryUnavailable says which repositories failed, as the ledger knows them."""
    resolver, _, _, _ = _setup()
    with pytest.raises(RegistryUnavailable) as raised:
        resolver.resolve(KEY)
    expected = (RegistryOutage("flaky", T0, T0, ERROR),)
    assert expected == raised.value.outages


def test_the_next_answer_ends_the_outage() -> None:
    """A 'not found' from the repository that failed ends its outage."""
    resolver, flaky, _, _ = _setup()
    with pytest.raises(RegistryUnavailable):
        resolver.resolve(KEY)
    flaky.failing = False
    resolution = resolver.resolve(KEY)
    expected = (True, ())
    assert expected == (isinstance(resolution, SchemaNotFound), resolver.outages.current())


def test_a_schema_found_elsewhere_does_not_end_the_outage() -> None:
    """Another repository having the schema says nothing about the failing one."""
    resolver, _, good, _ = _setup()
    good.add(KEY, {"type": "object"})
    resolution = resolver.resolve(KEY)
    expected = (True, ("flaky",))
    actual = (
        isinstance(resolution, ResolvedSchema),
        tuple(outage.repository for outage in resolver.outages.current()),
    )
    assert expected == actual


def test_the_listener_hears_one_start_and_one_end_per_outage() -> None:
    """Three failures and a recovery make two transitions, not one line per lookup."""
    listener = _Listener()
    resolver, flaky, _, _ = _setup(listener)
    for key in (KEY, OTHER, KEY):
        with pytest.raises(RegistryUnavailable):
            resolver.resolve(key)
    flaky.failing = False
    resolver.resolve(KEY)
    resolver.resolve(OTHER)
    expected = [("started", "flaky", 1), ("ended", "flaky", 3)]
    assert expected == listener.seen


def test_merge_keeps_the_earliest_start_and_the_latest_error() -> None:
    """Two observers' views of one outage combine into the longest, latest one."""
    early = RegistryOutage("r", T0, T0.replace(minute=1), "first", failures=2)
    late = RegistryOutage("r", T0.replace(minute=2), T0.replace(minute=3), "second")
    expected = RegistryOutage("r", T0, T0.replace(minute=3), "second", failures=3)
    assert expected == early.merge(late) == late.merge(early)


def test_to_json_shows_utc_times() -> None:
    """``/readyz`` shows the outage with ISO UTC times."""
    outage = RegistryOutage("r", T0, T0.replace(minute=1), "boom", failures=4)
    expected = {
        "repository": "r",
        "since": "2024-05-01T12:00:00.000Z",
        "lastFailure": "2024-05-01T12:01:00.000Z",
        "lastError": "boom",
        "failures": 4,
    }
    assert expected == outage.to_json()
