"""Malformed enriched lines of the kinds a real pipeline meets, each bound to become a bad row.

Kinds (``MALFORMED_KINDS``):
    ``not_tsv``          JSON or CSV where a TSV line was expected            → parsing error
    ``field_count``      a good line with fields cut off or extra ones added  → parsing error
    ``bad_timestamp``    ``collector_tstamp`` that is no timestamp            → parsing error
    ``bad_json``         ``contexts`` holding truncated JSON                   → parsing error
    ``unknown_schema``   an unstruct event whose schema no registry holds      → Iglu error

Notes:
    Every malformed line still carries its event id as text, so the bad row written for it
    can be matched to the line that was sent (the bad row's payload holds the line or its
    fields).
"""

from __future__ import annotations

from collections.abc import Callable

from plowline_devstack.demo.traffic import Traffic, assemble, unstruct_text

MALFORMED_KINDS = ("not_tsv", "field_count", "bad_timestamp", "bad_json", "unknown_schema")
UNKNOWN_SCHEMA = "iglu:com.acme/coupon_applied/jsonschema/1-0-0"
"""A schema under a vendor the example resolver serves, absent from its registry."""

_BAD_TIMESTAMPS = ("2024-02-30 25:61:00.000", "yesterday at noon", "1714557600")


def malformed_line(traffic: Traffic, kind: str, event_id: str) -> str:
    """Return a malformed line of ``kind`` (one of ``MALFORMED_KINDS``) carrying ``event_id``."""
    return _MAKERS[kind](traffic, event_id)


def _not_tsv(traffic: Traffic, event_id: str) -> str:
    if traffic.rng.random() < 0.5:
        return f'{{"event_id":"{event_id}","event":"page_view","note":"JSON, not enriched TSV"}}'
    return f"acme-shop,web,page_view,{event_id},https://shop.acme.example/"


def _field_count(traffic: Traffic, event_id: str) -> str:
    fields = assemble(traffic.fields("page_view", event_id)).split("\t")
    cut = traffic.rng.randrange(1, 61)
    if cut % 3 == 0:
        return "\t".join([*fields, *(["extra"] * (cut // 3))])
    return "\t".join(fields[:-cut])


def _bad_timestamp(traffic: Traffic, event_id: str) -> str:
    fields = traffic.fields("page_view", event_id)
    fields["collector_tstamp"] = traffic.rng.choice(_BAD_TIMESTAMPS)
    return assemble(fields)


def _bad_json(traffic: Traffic, event_id: str) -> str:
    fields = traffic.fields("page_view", event_id)
    whole = fields["contexts"]
    fields["contexts"] = whole[: len(whole) // 2]
    return assemble(fields)


def _unknown_schema(traffic: Traffic, event_id: str) -> str:
    fields = traffic.fields("link_click", event_id)
    fields["event_vendor"], fields["event_name"] = "com.acme", "coupon_applied"
    fields["event_version"] = "1-0-0"
    fields["unstruct_event"] = unstruct_text(UNKNOWN_SCHEMA, {"code": "SPRING10"})
    return assemble(fields)


_MAKERS: dict[str, Callable[[Traffic, str], str]] = {
    "not_tsv": _not_tsv,
    "field_count": _field_count,
    "bad_timestamp": _bad_timestamp,
    "bad_json": _bad_json,
    "unknown_schema": _unknown_schema,
}
