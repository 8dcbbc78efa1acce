"""A schema as schema-ddl re-encodes it, and the recovery hash 2.x takes of that text."""

from __future__ import annotations

from typing import Any

import pytest
from plowline_core.schema.ddl_json import KEYS, InvalidSchema, recovery_hash, reencode
from plowline_core.schema.scala_order import champ_order, java_string_hash


def _encoded(**present: Any) -> dict[str, Any]:
    """Return the 21 keys in schema-ddl's order, null unless given."""
    return {key: present.get(key) for key in KEYS}


def _text(value: Any) -> str:
    import json

    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def test_reencode_writes_21_keys_in_order_with_nulls_nested_too() -> None:
    """Every schema, nested ones too, is written with schema-ddl's 21 keys in its order."""
    schema = {
        "self": {"vendor": "com.acme", "name": "shoe", "format": "jsonschema", "version": "1-0-0"},
        "title": "dropped",
        "type": "object",
        "properties": {"size": {"type": "integer", "description": "EU size"}},
        "required": ["size"],
        "additionalProperties": False,
    }
    size = _encoded(type="integer", description="EU size")
    expected = _encoded(
        type="object", properties={"size": size}, required=["size"], additionalProperties=False
    )
    assert _text(expected) == reencode(schema)


@pytest.mark.parametrize(
    ("keyword", "given", "written"),
    [
        pytest.param("minimum", 10.0, 10, id="whole-float-minimum-as-integer"),
        pytest.param("maximum", 2.5, 2.5, id="fraction-kept"),
        pytest.param("multipleOf", 1e2, 100, id="exponent-whole-as-integer"),
        pytest.param("format", "ivp6", "ipv6", id="ivp6-written-ipv6"),
        pytest.param("format", "my-format", "my-format", id="custom-format-kept"),
        pytest.param("type", ["string"], "string", id="one-type-list-as-string"),
        pytest.param("type", ["string", "null", "string"], ["string", "null"], id="type-set"),
    ],
)
def test_reencode_normalises_keyword_values(keyword: str, given: Any, written: Any) -> None:
    """Numbers, formats and type lists are written as schema-ddl's model holds them."""
    assert _text(_encoded(**{keyword: written})) == reencode({keyword: given})


def test_up_to_four_properties_keep_document_order() -> None:
    """Four properties are written in document order (Scala's Map1..Map4)."""
    props = {name: {} for name in ["zeta", "alpha", "mid", "beta"]}
    text = reencode({"properties": props})
    assert [text.index(f'"{n}":') for n in props] == sorted(text.index(f'"{n}":') for n in props)


def test_five_properties_follow_scala_hashmap_order() -> None:
    """From five properties on, the order is Scala 2.13's immutable HashMap order."""
    names = ["zeta", "alpha", "mid", "beta", "gamma", "delta"]
    text = reencode({"properties": {name: {} for name in names}})
    written = sorted(names, key=lambda n: text.index(f'"{n}":'))
    assert champ_order(names) == written


def test_five_types_follow_scala_hashset_order_of_type_objects() -> None:
    """A type list of five or more is ordered as Scala's HashSet of schema-ddl's type objects."""
    given = ["string", "null", "integer", "boolean", "array"]
    by_object = {"String": "string", "Null": "null", "Integer": "integer"}
    by_object |= {"Boolean": "boolean", "Array": "array"}
    expected = [by_object[name] for name in champ_order(by_object)]
    assert _text(_encoded(type=expected)) == reencode({"type": given})


@pytest.mark.parametrize(
    "schema",
    [
        pytest.param({"properties": "not an object"}, id="properties-string"),
        pytest.param({"properties": {"a": 5}}, id="property-not-a-schema"),
        pytest.param({"type": "text"}, id="unknown-type"),
        pytest.param({"type": []}, id="empty-type-list"),
        pytest.param({"maxLength": 1.5}, id="fractional-length"),
        pytest.param({"required": "a"}, id="required-not-a-list"),
        pytest.param({"minimum": "0"}, id="minimum-a-string"),
        pytest.param({"items": [{"type": "string"}, 3]}, id="tuple-item-not-a-schema"),
        pytest.param([], id="not-an-object"),
    ],
)
def test_schema_that_does_not_decode_is_invalid(schema: Any) -> None:
    """A keyword of the wrong JSON type makes the schema undecodable, as in schema-ddl."""
    with pytest.raises(InvalidSchema):
        reencode(schema)


def test_null_keyword_reads_as_absent() -> None:
    """A keyword given as null is written as null (circe's Option decoder)."""
    assert _text(_encoded()) == reencode({"properties": None, "title": "x"})


def test_recovery_hash_is_java_hashcode_of_reencoded_text_in_8_hex_digits() -> None:
    """The hash is "%08x" of String.hashCode of the re-encoded text, negative hashes too."""
    schema = {"type": "object", "properties": {"colour": {"type": "string"}}}
    expected = format(java_string_hash(reencode(schema)) & 0xFFFFFFFF, "08x")
    assert (expected, 8) == (recovery_hash(schema), len(recovery_hash(schema)))


def test_recovery_hash_ignores_keys_schema_ddl_drops() -> None:
    """Two schemas differing only in self and title hash alike."""
    base = {"type": "object", "properties": {"colour": {"type": "string"}}}
    assert recovery_hash(base) == recovery_hash({**base, "title": "t", "self": {"name": "x"}})


def test_every_iglu_central_json_schema_decodes() -> None:
    """No JSON Schema of Iglu Central is refused: InvalidSchema fails events, so no false alarms."""
    from pathlib import Path

    import orjson
    from plowline_core.schema.ddl_json import check

    root = Path(__file__).resolve().parents[2] / "data" / "iglu-central" / "schemas"
    paths = sorted(root.glob("*/*/jsonschema/*"))
    assert paths, f"Iglu Central is carried in {root}"
    refused = []
    for path in paths:
        try:
            check(orjson.loads(path.read_bytes()))
        except InvalidSchema:
            refused.append(path.name)
    assert refused == []
