"""Specification of the log lines of an Iglu registry outage: one when it starts, one when it ends."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from plowline_cloud.iglu import LoggedOutages
from plowline_core.errors import RegistryUnavailable
from plowline_core.iglu.config import HttpConnection, RepositoryRef
from plowline_core.iglu.key import SchemaKey
from plowline_core.iglu.outage import OutageLedger
from plowline_core.iglu.resolver import Resolver
from plowline_core.testing.clock import FixedClock
from plowline_core.testing.registry import InMemoryRegistry
from structlog.testing import capture_logs

T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
KEYS = [SchemaKey.parse(f"iglu:com.acme/e{n}/jsonschema/1-0-0") for n in range(20)]


def test_an_outage_of_many_lookups_logs_two_lines() -> None:
    """Twenty failed lookups and a recovery log one warning and one info, naming the registry."""
    registry = InMemoryRegistry("central", failing=True)
    clock = FixedClock(T0)
    ref = RepositoryRef("central", 0, (), HttpConnection("https://iglucentral.com"))
    resolver = Resolver([(ref, registry)], clock, outages=OutageLedger(LoggedOutages()))
    with capture_logs() as logs:
        for key in KEYS:
            with pytest.raises(RegistryUnavailable):
                resolver.resolve(key)
        clock.advance(90)
        registry.failing = False
        resolver.resolve(KEYS[0])
    expected = [
        ("warning", "central", None, None),
        ("info", "central", 90.0, 20),
    ]
    actual = [
        (log["log_level"], log["registry"], log.get("outage_s"), log.get("failures"))
        for log in logs
    ]
    assert expected == actual
