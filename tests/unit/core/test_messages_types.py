"""Specification of the types-topic payload (loader to mutator)."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from plowline_core.iglu.key import SchemaKey, SchemaVer
from plowline_core.messages import MessageError, decode_types, encode_types
from plowline_core.schema.entity import EntityType, ShredProperty

PAGE = SchemaKey.parse("iglu:com.snowplowanalytics.snowplow/web_page/jsonschema/1-0-0")
CHECKOUT = SchemaKey.parse("iglu:com.acme/checkout_started/jsonschema/1-0-0")

_segment = st.from_regex(r"[a-zA-Z0-9_][a-zA-Z0-9\-_]{0,11}", fullmatch=True)
_keys = st.builds(
    SchemaKey,
    vendor=st.from_regex(r"[a-zA-Z0-9_][a-zA-Z0-9\-_.]{0,15}", fullmatch=True),
    name=_segment,
    format=st.just("jsonschema"),
    version=st.builds(SchemaVer, st.integers(0, 20), st.integers(0, 20), st.integers(0, 20)),
)
_entities = st.builds(EntityType, _keys, st.sampled_from(list(ShredProperty)))


def test_encodes_a_sorted_array_of_schema_and_type() -> None:
    """The payload is a JSON array of {schema, type}, sorted by schema then property."""
    types = [
        EntityType(PAGE, ShredProperty.CONTEXTS),
        EntityType(CHECKOUT, ShredProperty.UNSTRUCT_EVENT),
    ]
    expected = [
        {"schema": "iglu:com.acme/checkout_started/jsonschema/1-0-0", "type": "UNSTRUCT_EVENT"},
        {
            "schema": "iglu:com.snowplowanalytics.snowplow/web_page/jsonschema/1-0-0",
            "type": "CONTEXTS",
        },
    ]
    assert expected == orjson.loads(encode_types(types))


def test_encoding_drops_duplicates() -> None:
    """The same type given twice is sent once."""
    page = EntityType(PAGE, ShredProperty.CONTEXTS)
    expected = 1
    assert expected == len(orjson.loads(encode_types([page, page])))


@given(st.lists(_entities, max_size=8))
def test_round_trip(types: list[EntityType]) -> None:
    """Decoding an encoded payload gives the sorted, duplicate-free types."""
    assert sorted(set(types)) == decode_types(encode_types(types))


@given(st.lists(_entities, max_size=8))
def test_encoding_is_deterministic(types: list[EntityType]) -> None:
    """The bytes do not depend on the order the types were seen in."""
    assert encode_types(types) == encode_types(reversed(types))


def test_decodes_the_self_describing_single_item_form() -> None:
    """A shredded_type self-describing object with `location` is one type."""
    payload = {
        "schema": "iglu:com.snowplowanalytics.snowplow/shredded_type/jsonschema/1-0-0",
        "data": {"schema": PAGE.to_uri(), "location": "DERIVED_CONTEXTS"},
    }
    assert [EntityType(PAGE, ShredProperty.DERIVED_CONTEXTS)] == decode_types(orjson.dumps(payload))


def test_decodes_the_self_describing_array_form() -> None:
    """A shredded_type self-describing object may carry an array of items."""
    payload = {
        "schema": "iglu:com.snowplowanalytics.snowplow/shredded_type/jsonschema/1-0-0",
        "data": [
            {"schema": PAGE.to_uri(), "location": "CONTEXTS"},
            {"schema": CHECKOUT.to_uri(), "location": "UNSTRUCT_EVENT"},
        ],
    }
    expected = [
        EntityType(PAGE, ShredProperty.CONTEXTS),
        EntityType(CHECKOUT, ShredProperty.UNSTRUCT_EVENT),
    ]
    assert expected == decode_types(orjson.dumps(payload))


def test_decodes_an_empty_array() -> None:
    """An empty array is no types, not an error."""
    expected: list[object] = []
    assert expected == decode_types(b"[]")


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        pytest.param(b"{not json", "not JSON", id="not-json"),
        pytest.param(b'{"a": 1}', "types: expected a JSON array or a iglu:", id="other-object"),
        pytest.param(b"[1]", "types[0]: expected an object, got int", id="item-not-object"),
        pytest.param(
            b'[{"schema": "web_page", "type": "CONTEXTS"}]',
            "types[0].schema: 'web_page' is not an iglu:",
            id="bad-uri",
        ),
        pytest.param(
            b'[{"schema": 3, "type": "CONTEXTS"}]',
            "types[0].schema: 3 is not an iglu:",
            id="uri-not-string",
        ),
        pytest.param(
            b'[{"schema": "iglu:a/b/jsonschema/1-0-0", "type": "ATOMIC"}]',
            "types[0].type: 'ATOMIC' is not one of CONTEXTS, DERIVED_CONTEXTS, UNSTRUCT_EVENT",
            id="unknown-property",
        ),
        pytest.param(
            b'[{"schema": "iglu:a/b/jsonschema/1-0-0", "type": {}}]',
            "types[0].type: {} is not one of",
            id="property-not-string",
        ),
        pytest.param(
            b'{"schema": "iglu:com.snowplowanalytics.snowplow/shredded_type/jsonschema/1-0-0", "data": 1}',
            "types: shredded_type data must be an object or array, got int",
            id="shredded-type-data-int",
        ),
    ],
)
def test_unreadable_payloads_are_message_errors(payload: bytes, expected: str) -> None:
    """A payload that cannot be read is a MessageError value naming the problem."""
    result = decode_types(payload)
    assert isinstance(result, MessageError)
    assert result.message.startswith(expected), result.message
