"""``preview()`` over a hand-written resolver fake: one output object per URI."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from plowline_core.errors import RegistryUnavailable
from plowline_core.iglu.config import EmbeddedConnection, RepositoryRef
from plowline_core.iglu.key import SchemaKey
from plowline_core.iglu.resolver import Resolution, ResolvedSchema, Resolver
from plowline_core.schema.entity import ColumnMode, ShredProperty
from plowline_core.testing.clock import FixedClock
from plowline_core.testing.registry import InMemoryRegistry
from plowline_mutator.preview import preview

URI = "iglu:com.acme/thing/jsonschema/1-0-0"


class FailingResolver:
    """A resolver whose registry is down."""

    def resolve(self, key: SchemaKey) -> Resolution:
        """Fail like an unreachable Iglu Server."""
        raise RegistryUnavailable("iglu server timed out")


class OneSchemaResolver:
    """A resolver that knows every key as the same object schema."""

    def resolve(self, key: SchemaKey) -> Resolution:
        """Return a one-property schema."""
        return ResolvedSchema(
            key, {"type": "object", "properties": {"aB": {"type": "integer"}}}, "mem"
        )


def test_preview_turns_unavailable_registry_into_error_object() -> None:
    """A failing registry gives an error object for that schema, not an exception."""
    lines = list(preview([URI], FailingResolver(), ShredProperty.CONTEXTS, ColumnMode.FULL))
    assert lines == [{"schema": URI, "error": "registry unavailable: iglu server timed out"}]


def test_preview_prints_normalised_column() -> None:
    """A resolved schema gives its column in BigQuery schema JSON, normalised names."""
    lines = list(preview([URI], OneSchemaResolver(), ShredProperty.UNSTRUCT_EVENT, ColumnMode.FULL))
    expected = {
        "name": "unstruct_event_com_acme_thing_1_0_0",
        "type": "RECORD",
        "mode": "NULLABLE",
        "fields": [{"name": "a_b", "type": "INTEGER", "mode": "NULLABLE"}],
    }
    assert [expected] == lines


def _acme_resolver() -> Resolver:
    """A resolver over com.acme/shoe 3-0-0, 3-0-1 and 3-1-0, each adding one field."""
    props: dict[str, Any] = {}
    schemas = {}
    for version, added in (("3-0-0", "size"), ("3-0-1", "colour"), ("3-1-0", "brand")):
        props = {**props, added: {"type": "string"}}
        schemas[SchemaKey.parse(f"iglu:com.acme/shoe/jsonschema/{version}")] = {
            "type": "object",
            "properties": props,
            "required": ["size"],
        }
    registry = InMemoryRegistry("acme", schemas)
    ref = RepositoryRef("acme", 0, (), EmbeddedConnection("acme"))
    return Resolver([(ref, registry)], FixedClock(datetime(2026, 1, 1, tzinfo=UTC)))


def test_major_preview_merges_every_minor_version_up_to_the_key() -> None:
    """--column-mode major on 3-1-0 gives size!, colour, brand: 3-0-0's field first."""
    uri = "iglu:com.acme/shoe/jsonschema/3-1-0"
    (line,) = preview([uri], _acme_resolver(), ShredProperty.UNSTRUCT_EVENT, ColumnMode.MAJOR)
    fields = [(f["name"], f["mode"]) for f in line["fields"]]
    expected = [("size", "REQUIRED"), ("colour", "NULLABLE"), ("brand", "NULLABLE")]
    assert ("unstruct_event_com_acme_shoe_3", expected) == (line["name"], fields)
