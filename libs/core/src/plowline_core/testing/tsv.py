"""Builders of enriched TSV lines for tests of every package.

``enriched_line()`` is a valid 131-field page view; override any field by name::

    enriched_line(event_id="…", br_cookies=True, se_value=1.5, page_title=None,
                  contexts=[("iglu:com.acme/ctx/jsonschema/1-0-0", {"a": 1})],
                  unstruct_event=("iglu:com.acme/click/jsonschema/1-0-0", {"x": 2}))

Values: ``str`` is written as is (raw TSV text, may be invalid on purpose); ``None`` is an
empty field; ``bool`` is ``1``/``0``; ``int``/``float`` are their text; ``datetime`` is
``YYYY-MM-DD HH:MM:SS.fff`` (UTC). Entity fields also take entities (see ``contexts_field``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, TypeAlias

import orjson

from plowline_core.event.fields import ENRICHED_FIELDS

CONTEXTS_SCHEMA = "iglu:com.snowplowanalytics.snowplow/contexts/jsonschema/1-0-0"
"""The envelope schema written by ``contexts_field``."""

UNSTRUCT_EVENT_SCHEMA = "iglu:com.snowplowanalytics.snowplow/unstruct_event/jsonschema/1-0-0"
"""The envelope schema written by ``unstruct_event_field``."""

Entity: TypeAlias = tuple[str, Any] | Mapping[str, Any]
"""``(schema_uri, data)`` or an already self-describing ``{"schema", "data"}`` mapping."""

DEFAULTS: Mapping[str, str] = {
    "app_id": "plowline-test",
    "platform": "web",
    "etl_tstamp": "2024-05-01 10:00:01.123",
    "collector_tstamp": "2024-05-01 10:00:00.456",
    "dvce_created_tstamp": "2024-05-01 09:59:59.789",
    "event": "page_view",
    "event_id": "c6ef3124-b53a-4b13-a233-0088f79dcbcb",
    "name_tracker": "sp",
    "v_tracker": "js-3.5.0",
    "v_collector": "ssc-2.9.0-pubsub",
    "v_etl": "snowplow-enrich-pubsub-3.9.0",
    "user_ipaddress": "192.0.2.10",
    "domain_userid": "bc2e92ec6c204a14",
    "domain_sessionidx": "3",
    "network_userid": "ecdff4d0-9175-40ac-a8bb-325c49733607",
    "geo_country": "FR",
    "geo_latitude": "48.8566",
    "geo_longitude": "2.3522",
    "page_url": "https://www.example.com/index.html",
    "page_title": "Example",
    "page_urlscheme": "https",
    "page_urlhost": "www.example.com",
    "page_urlport": "443",
    "page_urlpath": "/index.html",
    "useragent": "Mozilla/5.0",
    "br_features_pdf": "1",
    "br_cookies": "1",
    "br_viewwidth": "1280",
    "br_viewheight": "720",
    "dvce_screenwidth": "1920",
    "dvce_screenheight": "1080",
    "dvce_sent_tstamp": "2024-05-01 09:59:59.800",
    "domain_sessionid": "2b15e5c8-d3b1-11e4-b9d6-1681e6b88ec1",
    "derived_tstamp": "2024-05-01 09:59:59.790",
    "event_vendor": "com.snowplowanalytics.snowplow",
    "event_name": "page_view",
    "event_format": "jsonschema",
    "event_version": "1-0-0",
    "event_fingerprint": "e3dbfa9cca0412c3d4052863cefb547f",
}
"""The non-empty fields of the default line (every other field is empty)."""

_NAMES = tuple(field.name for field in ENRICHED_FIELDS)
_KNOWN = frozenset(_NAMES)
_ENTITY_WRITERS = {
    "contexts": lambda value: contexts_field(*value),
    "derived_contexts": lambda value: contexts_field(*value),
    "unstruct_event": lambda value: unstruct_event_field(value),
}


def self_describing(entity: Entity) -> dict[str, Any]:
    """Return ``entity`` as a ``{"schema", "data"}`` dict."""
    if isinstance(entity, Mapping):
        return dict(entity)
    schema, data = entity
    return {"schema": schema, "data": data}


def contexts_field(*entities: Entity, envelope: str = CONTEXTS_SCHEMA) -> str:
    """Return the text of a ``contexts``/``derived_contexts`` field holding ``entities``."""
    document = {"schema": envelope, "data": [self_describing(entity) for entity in entities]}
    return orjson.dumps(document).decode()


def unstruct_event_field(entity: Entity, envelope: str = UNSTRUCT_EVENT_SCHEMA) -> str:
    """Return the text of an ``unstruct_event`` field holding ``entity``."""
    return orjson.dumps({"schema": envelope, "data": self_describing(entity)}).decode()


def field_text(value: Any) -> str:
    """Return the TSV text of a Python value (see the module docstring)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, datetime):
        moment: datetime = value
        if moment.tzinfo is not None:
            moment = moment.astimezone(UTC).replace(tzinfo=None)
        return moment.isoformat(sep=" ", timespec="milliseconds")
    if isinstance(value, int | float):
        return repr(value)
    raise TypeError(f"no TSV text for {type(value).__name__} {value!r}")


def enriched_fields(**overrides: Any) -> list[str]:
    """Return the 131 field texts of the default line with ``overrides`` applied."""
    unknown = set(overrides) - _KNOWN
    if unknown:
        raise TypeError(f"not enriched fields: {sorted(unknown)}")
    texts = {**DEFAULTS}
    for name, value in overrides.items():
        writer = _ENTITY_WRITERS.get(name)
        if writer is not None and value is not None and not isinstance(value, str):
            texts[name] = writer(value)
        else:
            texts[name] = field_text(value)
    return [texts.get(name, "") for name in _NAMES]


def enriched_line(**overrides: Any) -> str:
    """Return a valid enriched TSV line (131 fields) with ``overrides`` applied."""
    return "\t".join(enriched_fields(**overrides))


def with_entities(
    contexts: Iterable[Entity] = (),
    derived_contexts: Iterable[Entity] = (),
    unstruct_event: Entity | None = None,
    **overrides: Any,
) -> str:
    """Return a valid line carrying the given entities (empty fields where none are given)."""
    contexts, derived_contexts = list(contexts), list(derived_contexts)
    return enriched_line(
        contexts=contexts or None,
        derived_contexts=derived_contexts or None,
        unstruct_event=unstruct_event,
        **overrides,
    )
