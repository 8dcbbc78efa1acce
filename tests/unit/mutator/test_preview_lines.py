"""``preview()`` over a hand-written resolver fake: one output object per URI."""

from __future__ import annotations

from plowline_core.errors import RegistryUnavailable
from plowline_core.iglu.key import SchemaKey
from plowline_core.iglu.resolver import Resolution, ResolvedSchema
from plowline_core.schema.entity import ColumnMode, ShredProperty
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
