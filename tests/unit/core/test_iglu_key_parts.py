"""Specification of SchemaKey's parts: Iglu's patterns, and no vendor that climbs a path."""

from __future__ import annotations

import pytest
from plowline_core.iglu.key import SchemaKey, SchemaVer

V1 = SchemaVer(1, 0, 0)


@pytest.mark.parametrize(
    "uri",
    [
        pytest.param("iglu:../checkout/jsonschema/1-0-0", id="vendor-dot-dot"),
        pytest.param("iglu:./checkout/jsonschema/1-0-0", id="vendor-dot"),
        pytest.param("iglu:.../checkout/jsonschema/1-0-0", id="vendor-dots-only"),
    ],
)
def test_a_vendor_of_dots_only_is_refused(uri: str) -> None:
    """``..`` as a vendor would climb out of a registry's schemas/: it is no schema URI."""
    with pytest.raises(ValueError, match="the vendor is dots only"):
        SchemaKey.parse(uri)


@pytest.mark.parametrize(
    "uri",
    [
        pytest.param("iglu:com.acme/checkout/jsonschema/1-0-0", id="reverse-domain"),
        pytest.param("iglu:.acme/checkout/jsonschema/1-0-0", id="leading-dot"),
        pytest.param("iglu:com..acme/checkout/jsonschema/1-0-0", id="double-dot-inside"),
        pytest.param("iglu:com_acme-x/check-out_2/json-schema/10-2-3", id="dashes-underscores"),
    ],
)
def test_a_vendor_iglu_accepts_still_parses(uri: str) -> None:
    """Every vendor Iglu's pattern admits, other than dots only, still parses."""
    assert uri == SchemaKey.parse(uri).to_uri()


@pytest.mark.parametrize(
    ("vendor", "name", "format_"),
    [
        pytest.param("..", "checkout", "jsonschema", id="vendor-dot-dot"),
        pytest.param("com.acme", "../../etc", "jsonschema", id="name-with-slashes"),
        pytest.param("com.acme", "checkout", "json/schema", id="format-with-slash"),
        pytest.param("com.acme\n", "checkout", "jsonschema", id="vendor-trailing-newline"),
        pytest.param("", "checkout", "jsonschema", id="vendor-empty"),
        pytest.param("com.acme", "check%2fout", "jsonschema", id="name-percent"),
    ],
)
def test_the_constructor_checks_the_parts_too(vendor: str, name: str, format_: str) -> None:
    """A key built field by field must have parts that are plain path segments."""
    with pytest.raises(ValueError, match="invalid schema key"):
        SchemaKey(vendor, name, format_, V1)
