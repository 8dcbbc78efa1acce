"""Specification of the loader's readiness: what /readyz shows and what is logged while it waits."""

from __future__ import annotations

from datetime import UTC, datetime

from plowline_core.iglu.outage import RegistryOutage
from plowline_loader.health import Readiness
from structlog.testing import capture_logs

T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
T1 = datetime(2024, 5, 1, 12, 1, 0, tzinfo=UTC)
T2 = datetime(2024, 5, 1, 12, 2, 0, tzinfo=UTC)
ERROR = "RegistryUnavailable: cannot resolve iglu:com.acme/a/jsonschema/1-0-0"


def _outage(
    since: datetime, error: str = "central: ReadTimeout", failures: int = 1
) -> RegistryOutage:
    return RegistryOutage("central", since, since, error, failures)


def test_details_name_the_registry_that_holds_batches_back() -> None:
    """Two partitions' views of one outage show as one registry: earliest start, latest error."""
    readiness = Readiness()
    readiness.started()
    readiness.degraded(ERROR, [_outage(T1, "central: 503"), _outage(T0, "central: ReadTimeout")])
    expected = {
        "started": True,
        "lastError": ERROR,
        "registries": [
            {
                "repository": "central",
                "since": "2024-05-01T12:00:00.000Z",
                "lastFailure": "2024-05-01T12:01:00.000Z",
                "lastError": "central: 503",
                "failures": 2,
            }
        ],
    }
    assert expected == readiness.details()


def test_since_is_kept_across_retries() -> None:
    """A later retry's report does not move the start of the outage forward."""
    readiness = Readiness()
    readiness.degraded(ERROR, [_outage(T0)])
    readiness.degraded(ERROR, [_outage(T2)])
    expected = T0
    assert expected == readiness.registry_outages["central"].since


def test_a_batch_that_goes_through_clears_the_registries() -> None:
    """Once a batch goes through, /readyz is ready and names no registry or error."""
    readiness = Readiness()
    readiness.started()
    readiness.degraded(ERROR, [_outage(T0)])
    readiness.recovered()
    expected = (True, {"started": True, "lastError": None, "registries": []})
    assert expected == (readiness(), readiness.details())


def test_an_outage_over_many_retries_logs_two_lines() -> None:
    """Ten held-back attempts and a recovery log one warning and one info for the registry."""
    readiness = Readiness()
    with capture_logs() as logs:
        for _ in range(10):
            readiness.degraded(ERROR, [_outage(T0)])
        readiness.recovered()
    expected = [("warning", "central"), ("info", "central")]
    assert expected == [(log["log_level"], log["registry"]) for log in logs]


def test_observers_hear_each_error_and_each_recovery() -> None:
    """An observer is told every held-back batch's error, then None when a batch goes through."""
    heard: list[str | None] = []
    readiness = Readiness()
    readiness.observe(heard.append)
    readiness.started()
    readiness.degraded(ERROR)
    readiness.recovered()
    expected = [ERROR, None]
    assert expected == heard


def test_a_failing_observer_never_fails_the_batch() -> None:
    """An observer that raises is logged; readiness still changes and the caller sees nothing."""

    def broken(error: str | None) -> None:
        raise RuntimeError("webhook down")

    readiness = Readiness()
    readiness.observe(broken)
    readiness.started()
    with capture_logs() as logs:
        readiness.degraded(ERROR)
    expected = (False, ["readiness observer failed"])
    assert expected == (readiness(), [e["event"] for e in logs if e["log_level"] == "warning"])
