"""Pub/Sub payloads between the services: entity types and failed inserts.

- types topic (loader → mutator): a JSON array ``[{"schema": "iglu:…", "type": "CONTEXTS"}]``,
  sorted and without duplicates. Decoding also accepts Snowplow's self-describing
  ``iglu:com.snowplowanalytics.snowplow/shredded_type/jsonschema/1-0-0`` form, whose ``data``
  is one ``{"schema", "location"}`` object (as Iglu Central defines it) or an array of them.
- failedInserts topic (loader → repeater): the BigQuery-JSON row exactly as it was sent.
  Decoding needs ``event_id`` (insertId on retry); ``etl_tstamp`` is read when present (an
  event may have none: the loader loads it with a NULL etl_tstamp, so its failed insert must
  come back too; the repeater's backoff counts from the message's publish time, not from it).

Notes:
    Pure. A payload that cannot be read is a ``MessageError`` value, never an exception.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson

from plowline_core.iglu.key import SchemaKey
from plowline_core.schema.entity import EntityType, ShredProperty

SHREDDED_TYPE_URI = "iglu:com.snowplowanalytics.snowplow/shredded_type/jsonschema/1-0-0"
_PROPERTIES = ", ".join(prop.value for prop in ShredProperty)


@dataclass(frozen=True, slots=True)
class MessageError:
    """Why a message payload could not be read."""

    message: str


@dataclass(frozen=True, slots=True)
class FailedInsert:
    """A row the table rejected, as read back by the repeater.

    Notes:
        ``etl_tstamp`` is parsed to an aware UTC datetime, None when the row has none;
        ``row`` is the whole row, unchanged, ready to insert again.
    """

    event_id: str
    etl_tstamp: datetime | None
    row: dict[str, Any]


def encode_types(types: Iterable[EntityType]) -> bytes:
    """Return the types-topic payload: a sorted, duplicate-free JSON array."""
    items = [
        {"schema": entity.schema.to_uri(), "type": entity.shred_property.value}
        for entity in sorted(set(types))
    ]
    return orjson.dumps(items)


def decode_types(data: bytes) -> list[EntityType] | MessageError:
    """Read a types payload (plain array or self-describing shredded_type), duplicates dropped."""
    document = _json(data)
    if isinstance(document, MessageError):
        return document
    items = _type_items(document)
    if isinstance(items, MessageError):
        return items
    result: dict[EntityType, None] = {}
    for index, item in enumerate(items):
        entity = _entity(item, index)
        if isinstance(entity, MessageError):
            return entity
        result[entity] = None
    return list(result)


def encode_failed_insert(row: Mapping[str, Any]) -> bytes:
    """Return the failedInserts payload: the row as compact JSON."""
    return orjson.dumps(row)


def decode_failed_insert(data: bytes) -> FailedInsert | MessageError:
    """Read a failed-insert payload: an object with event_id, and etl_tstamp null or ISO."""
    row = _json(data)
    if isinstance(row, MessageError):
        return row
    if not isinstance(row, dict):
        return MessageError(f"failed insert: expected a JSON object, got {_kind(row)}")
    event_id = row.get("event_id")
    if not isinstance(event_id, str) or not event_id:
        return MessageError(f"failed insert: event_id must be a non-empty string, got {event_id!r}")
    stamp = row.get("etl_tstamp")
    etl_tstamp = None if stamp is None else _timestamp(stamp)
    if stamp is not None and etl_tstamp is None:
        return MessageError(
            f"failed insert {event_id}: etl_tstamp must be an ISO timestamp, got {row.get('etl_tstamp')!r}"
        )
    return FailedInsert(event_id, etl_tstamp, row)


def _json(data: bytes) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as error:
        return MessageError(f"not JSON: {error}")


def _type_items(document: Any) -> list[Any] | MessageError:
    if isinstance(document, list):
        return document
    if isinstance(document, dict) and document.get("schema") == SHREDDED_TYPE_URI:
        payload = document.get("data")
        if isinstance(payload, dict):
            return [payload]
        if isinstance(payload, list):
            return payload
        return MessageError(
            f"types: shredded_type data must be an object or array, got {_kind(payload)}"
        )
    return MessageError(f"types: expected a JSON array or a {SHREDDED_TYPE_URI} object")


def _entity(item: Any, index: int) -> EntityType | MessageError:
    if not isinstance(item, dict):
        return MessageError(f"types[{index}]: expected an object, got {_kind(item)}")
    uri = item.get("schema")
    try:
        key = SchemaKey.parse(uri) if isinstance(uri, str) else None
    except ValueError:
        key = None
    if key is None:
        return MessageError(f"types[{index}].schema: {uri!r} is not an iglu: schema URI")
    where = item.get("type", item.get("location"))
    try:
        prop = ShredProperty(where) if isinstance(where, str) else None
    except ValueError:
        prop = None
    if prop is None:
        return MessageError(f"types[{index}].type: {where!r} is not one of {_PROPERTIES}")
    return EntityType(key, prop)


def _timestamp(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__
