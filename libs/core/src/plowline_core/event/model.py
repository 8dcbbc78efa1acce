"""The parsed enriched event: atomic values ready for BigQuery plus its entities."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from plowline_core.iglu.key import SchemaKey


@dataclass(frozen=True, slots=True)
class SelfDescribingData:
    """One entity: the schema it claims and its JSON data (as parsed, untouched)."""

    schema: SchemaKey
    data: Any


@dataclass(frozen=True, slots=True)
class EnrichedEvent:
    """A parsed enriched event.

    Notes:
        ``atomic`` maps atomic column name → BigQuery-JSON value (str, int, float, bool),
        in TSV order, NULLs omitted; timestamps are already ISO strings such as
        ``2013-11-26T00:02:05Z``. ``event_id`` and ``collector_tstamp`` are always present
        because the parser rejects a line without them.
    """

    atomic: dict[str, Any]
    contexts: tuple[SelfDescribingData, ...] = ()
    derived_contexts: tuple[SelfDescribingData, ...] = ()
    unstruct_event: SelfDescribingData | None = None

    @property
    def event_id(self) -> str:
        """The event's UUID (the BigQuery insertId)."""
        return str(self.atomic["event_id"])
