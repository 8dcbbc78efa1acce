"""The enriched event as bad-row payload JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft4Validator
from plowline_core.event.fields import ENRICHED_FIELDS
from plowline_core.event.json import event_payload
from plowline_core.event.model import EnrichedEvent
from plowline_core.event.parser import parse
from plowline_core.testing.tsv import enriched_line

_BADROWS = Path("vectors/badrows/com.snowplowanalytics.snowplow.badrows")


def _event(**overrides: Any) -> EnrichedEvent:
    event = parse(enriched_line(**overrides))
    assert isinstance(event, EnrichedEvent)
    return event


def _payload_validator(conformance_dir: Path, schema: str) -> Draft4Validator:
    document = json.loads((conformance_dir / _BADROWS / schema).read_text())
    return Draft4Validator(document["properties"]["payload"])


def test_payload_has_every_field_in_tsv_order() -> None:
    """The payload names all 131 fields in TSV order, null where empty."""
    payload = event_payload(_event(page_title=None))
    assert ([f.name for f in ENRICHED_FIELDS], None) == (list(payload), payload["page_title"])


def test_payload_entities_are_self_describing() -> None:
    """Entities are written inside the SDK's contexts and unstruct_event envelopes."""
    event = _event(
        contexts=[("iglu:com.acme/ctx/jsonschema/1-0-0", {"a": 1})],
        unstruct_event=("iglu:com.acme/click/jsonschema/1-0-1", {"x": 2}),
    )
    payload = event_payload(event)
    expected = (
        {
            "schema": "iglu:com.snowplowanalytics.snowplow/contexts/jsonschema/1-0-0",
            "data": [{"schema": "iglu:com.acme/ctx/jsonschema/1-0-0", "data": {"a": 1}}],
        },
        {
            "schema": "iglu:com.snowplowanalytics.snowplow/unstruct_event/jsonschema/1-0-0",
            "data": {"schema": "iglu:com.acme/click/jsonschema/1-0-1", "data": {"x": 2}},
        },
        None,
    )
    assert expected == (payload["contexts"], payload["unstruct_event"], payload["derived_contexts"])


@pytest.mark.parametrize(
    "schema", ["loader_iglu_error/jsonschema/2-0-0", "loader_runtime_error/jsonschema/1-0-1"]
)
@pytest.mark.parametrize("name", ["enriched_001.json", "enriched_002.json", "enriched_005.json"])
def test_vector_payload_validates(conformance_dir: Path, schema: str, name: str) -> None:
    """The payload of each SDK vector event validates against the bad rows' payload schema."""
    vector = json.loads((conformance_dir / "vectors" / name).read_text())
    event = parse(vector["tsv"])
    assert isinstance(event, EnrichedEvent)
    validator = _payload_validator(conformance_dir, schema)
    expected: list[str] = []
    assert expected == [error.message for error in validator.iter_errors(event_payload(event))]


_TEXT = st.text(st.characters(blacklist_characters="\t", blacklist_categories=("Cs",)), max_size=2)


@settings(max_examples=100)
@given(
    st.fixed_dictionaries(
        {},
        optional={
            "page_title": _TEXT,
            "geo_country": _TEXT,
            "txn_id": st.integers(-(2**31), 2**31 - 1),
            "se_value": st.floats(allow_nan=False, allow_infinity=False),
            "br_cookies": st.booleans(),
            "true_tstamp": st.datetimes(),
        },
    )
)
def test_random_event_payload_validates(conformance_dir: Path, overrides: dict[str, Any]) -> None:
    """Payloads of events with random values validate against loader_iglu_error's payload."""
    validator = _payload_validator(conformance_dir, "loader_iglu_error/jsonschema/2-0-0")
    payload = event_payload(_event(**overrides))
    expected: list[str] = []
    assert expected == [error.message for error in validator.iter_errors(payload)]
