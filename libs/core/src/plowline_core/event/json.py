"""The enriched event as JSON, the ``payload`` of ``loader_iglu_error`` and ``loader_runtime_error``.

Notes:
    Pure. Follows the payload property of ``loader_iglu_error/2-0-0`` and
    ``loader_runtime_error/1-0-1``: all 131 fields by name in TSV order, ``null`` where
    empty; the three entity fields as self-describing JSON with the SDK's envelopes
    (``contexts``/``unstruct_event`` ``1-0-0``), ``null`` when absent. The payload validates
    whenever string fields respect their Snowplow maximum lengths (enrich enforces them).
"""

from __future__ import annotations

from typing import Any

from plowline_core.event.fields import ENRICHED_FIELDS
from plowline_core.event.model import EnrichedEvent, SelfDescribingData

CONTEXTS_URI = "iglu:com.snowplowanalytics.snowplow/contexts/jsonschema/1-0-0"
"""Envelope written for ``contexts`` and ``derived_contexts``."""

UNSTRUCT_EVENT_URI = "iglu:com.snowplowanalytics.snowplow/unstruct_event/jsonschema/1-0-0"
"""Envelope written for ``unstruct_event``."""

_ALL_NULL: dict[str, Any] = dict.fromkeys(field.name for field in ENRICHED_FIELDS)


def self_describing_json(entity: SelfDescribingData) -> dict[str, Any]:
    """Return one entity as ``{"schema": uri, "data": data}``."""
    return {"schema": entity.schema.to_uri(), "data": entity.data}


def contexts_json(entities: tuple[SelfDescribingData, ...]) -> dict[str, Any] | None:
    """Return a contexts envelope holding ``entities``, or None when there are none."""
    if not entities:
        return None
    return {"schema": CONTEXTS_URI, "data": [self_describing_json(entity) for entity in entities]}


def unstruct_event_json(entity: SelfDescribingData | None) -> dict[str, Any] | None:
    """Return an unstruct_event envelope holding ``entity``, or None without one."""
    if entity is None:
        return None
    return {"schema": UNSTRUCT_EVENT_URI, "data": self_describing_json(entity)}


def event_payload(event: EnrichedEvent) -> dict[str, Any]:
    """Return the event as the bad-row ``payload`` JSON object (see the module notes)."""
    # All 131 names in TSV order, null first; the event's values land in their slots.
    payload = _ALL_NULL.copy()
    payload.update(event.atomic)
    payload["contexts"] = contexts_json(event.contexts)
    payload["unstruct_event"] = unstruct_event_json(event.unstruct_event)
    payload["derived_contexts"] = contexts_json(event.derived_contexts)
    return payload
