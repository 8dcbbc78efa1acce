"""The one exception tree of plowline.

    PlowlineError
    ├── ConfigError          a setting or file is wrong; fix it and restart (never retried)
    ├── TransientError       the outside world is failing; retry later, do not ack
    │   └── RegistryUnavailable   an Iglu registry timed out or answered 5xx
    └── PermanentError       retrying the same request cannot succeed
        └── ObjectExists     a create-only write found the name taken

Bad *data* is never an exception: parsing and transforming return a ``BadRow``.
Adapters translate third-party errors onto this tree at the boundary.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from plowline_core.iglu.outage import RegistryOutage


class PlowlineError(Exception):
    """Base of every error plowline raises on purpose."""


class ConfigError(PlowlineError):
    """A configuration value or file is invalid; the message names the culprit."""


class TransientError(PlowlineError):
    """A dependency is failing for now; the caller retries and does not ack."""


class RegistryUnavailable(TransientError):
    """An Iglu registry could not answer (timeout, connection error, 5xx).

    Notes:
        ``outages``: the repositories that failed, as the resolver's ledger knows them
        (since when, last error); empty when raised by a single registry.
    """

    def __init__(self, message: str, outages: tuple[RegistryOutage, ...] = ()) -> None:
        super().__init__(message)
        self.outages = outages


class PermanentError(PlowlineError):
    """The request can never succeed as it is; retrying is pointless."""


class ObjectExists(PermanentError):
    """A create-only write found an object of that name (written before, by someone)."""
