"""The recovery column's hash of a 2.x config's schema, as the README states the rule.

A 2.x version that retypes a field gets a column ``<column>_recovered_<M>_<R>_<A>_<hash>``;
``HASH_1_0_2`` (``support.snowplow``) is that hash for ``com.acme/cart_item`` 1-0-2 of
``tests/data/v2config/iglu``, computed here by the rule with no service running. The 2.x
config end to end (loader, mutator and repeater as processes, every event a row or a failed
event, the table's columns as 2.x's rules give) is
``tests/e2e/snowplow/test_snowplow_2x_columns.py``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from support.snowplow import HASH_1_0_2, V2CONFIG


def test_recovery_hash_is_the_readme_rule() -> None:
    """HASH_1_0_2 is Java's String.hashCode of cart_item 1-0-2 re-encoded as the README states."""
    keys = [
        "multipleOf",
        "minimum",
        "maximum",
        "maxLength",
        "minLength",
        "pattern",
        "format",
        "$schema",
        "items",
        "additionalItems",
        "minItems",
        "maxItems",
        "properties",
        "additionalProperties",
        "required",
        "patternProperties",
        "type",
        "enum",
        "oneOf",
        "anyOf",
        "description",
    ]

    def encode(schema: Mapping[str, Any]) -> dict[str, Any]:
        out = {key: schema.get(key) for key in keys}
        if out["properties"] is not None:
            out["properties"] = {k: encode(v) for k, v in schema["properties"].items()}
        return out

    schema = json.loads((V2CONFIG / "iglu/schemas/com.acme/cart_item/jsonschema/1-0-2").read_text())
    text = json.dumps(encode(schema), separators=(",", ":"), ensure_ascii=False)
    hashed = 0
    for unit in text.encode("utf-16-be").hex(" ", 2).split():
        hashed = (31 * hashed + int(unit, 16)) & 0xFFFFFFFF
    assert f"{hashed:08x}" == HASH_1_0_2
