"""``exitOnMissingIgluSchema``: hold the events whose schema cannot be found, for a bound.

Loader 2.x, with ``exitOnMissingIgluSchema: true`` (its default), exits when a batch needs
a schema no registry has, and restarts for ever until the schema is published. plowline
keeps loading instead, and holds only the events that need the missing schema:

    schema missing, message published less than ``bound_s`` ago   held: not acked; the
                                                                    driver keeps it leased
                                                                    and tries it again
                                                                    (``source.holding``)
    schema missing, published ``bound_s`` ago or more              loader_iglu_error
    ``exitOnMissingIgluSchema: false``, or a line from a file       loader_iglu_error at once

so that nothing is held for ever (the bound must stay well inside the subscription's
message retention, 7 days by default: the default bound is 6 hours) and nothing is lost:
a held event is written once its schema appears, or failed once the bound has passed.

Notes:
    Pure, and stateless: the bound counts from the message's publish time, the same on
    every delivery, so every executor decides alike and a restart changes nothing. A
    schema is missing when resolving it gave a ``ResolutionError`` (no registry has it);
    a registry that is down holds the whole batch instead (``RegistryUnavailable``).
    The held events are reported with their schemas (``BatchOutcome.held_schemas``):
    the driver shows them in ``/readyz`` and logs them, and a batch with held events
    still counts as progress (a known state, not a stall).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from plowline_core.badrows import BadRow, IgluErrorRow

DEFAULT_BOUND_S = 6 * 3600.0
"""How long an event needing a missing schema is held by default: 6 hours."""

MAX_BOUND_S = 6 * 24 * 3600.0
"""The longest bound accepted: 6 days, inside Pub/Sub's default 7-day retention."""

RETRY_S = 60
"""Seconds between the driver's tries of a held record (``source.holding``)."""

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class SchemaHold:
    """Whether events needing a missing schema are held, and for how long at most."""

    enabled: bool = False
    bound_s: float = DEFAULT_BOUND_S
    retry_s: int = RETRY_S  # seconds between the driver's tries of a held record

    def missing(self, bad: BadRow, published_us: int | None, now: datetime) -> Sequence[str]:
        """Return the missing schemas to hold ``bad``'s message for, or none to fail it now."""
        if not self.enabled or published_us is None or not isinstance(bad, IgluErrorRow):
            return ()
        schemas = missing_schemas(bad)
        if not schemas:
            return ()
        published = _EPOCH + timedelta(microseconds=published_us)
        return schemas if (now - published).total_seconds() < self.bound_s else ()


def missing_schemas(bad: IgluErrorRow) -> tuple[str, ...]:
    """Return the schemas of ``bad``'s failures that no registry could resolve."""
    keys = []
    for failure in bad.failures:
        error = failure.get("error")
        if isinstance(error, dict) and error.get("error") == "ResolutionError":
            keys.append(str(failure.get("schemaKey")))
    return tuple(keys)


NO_HOLD = SchemaHold()
"""No hold: an event whose schema is missing is a bad row at once (the default)."""
