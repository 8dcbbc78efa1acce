"""The 2.x column of an entity key: minor versions merged, recovery columns, no column."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from plowline_core.iglu.config import EmbeddedConnection, RepositoryRef
from plowline_core.iglu.key import SchemaKey, SchemaVer
from plowline_core.iglu.resolver import Resolver, SchemaNotFound
from plowline_core.schema.ddl_json import InvalidSchema, recovery_hash
from plowline_core.schema.entity import ShredProperty
from plowline_core.schema.field import Field, FieldType, Mode
from plowline_core.schema.major import MajorColumn, major_column
from plowline_core.testing.clock import FixedClock
from plowline_core.testing.registry import InMemoryRegistry

UE = ShredProperty.UNSTRUCT_EVENT
CTX = ShredProperty.CONTEXTS
S, INT, F = FieldType.STRING, FieldType.INTEGER, FieldType.FLOAT
REQ, NUL = Mode.REQUIRED, Mode.NULLABLE


def _obj(props: dict[str, Any], required: list[str] | None = None, **more: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required or [], **more}


_STR = {"type": "string"}
# com.acme/basket: 1-0-1 retypes "id" (no merge); 1-0-2 adds "alpha"; 1-1-0 adds "qty".
BASKET = {
    "1-0-0": _obj({"id": _STR}, ["id"]),
    "1-0-1": _obj({"id": {"type": "number"}}, ["id"]),
    "1-0-2": _obj({"id": _STR, "alpha": _STR}, ["id"]),
    "1-1-0": _obj({"id": _STR, "alpha": _STR, "qty": {"type": "integer"}}, ["id", "qty"]),
}
# com.acme/gap: 2-0-0 and 2-1-0, no 2-0-1 (found by probing past the missing addition).
GAP = {"2-0-0": _obj({"a": _STR}, ["a"]), "2-1-0": _obj({"a": _STR, "b": _STR}, ["a"])}
OTHERS = {
    "iglu:com.acme/closed/jsonschema/1-0-0": {"type": "object", "additionalProperties": False},
    "iglu:com.acme/open/jsonschema/1-0-0": {"type": "object"},
    "iglu:com.acme/broken/jsonschema/1-0-0": _obj({"a": _STR}),
    "iglu:com.acme/broken/jsonschema/1-0-1": {"properties": "a string is no schema map"},
    "iglu:com.acme/dropped/jsonschema/1-0-0": _obj({"a": _STR}),
    "iglu:com.acme/dropped/jsonschema/1-0-1": {"type": "object", "additionalProperties": False},
}


def _registry() -> InMemoryRegistry:
    schemas = {SchemaKey.parse(uri): schema for uri, schema in OTHERS.items()}
    for family, versions in (("basket", BASKET), ("gap", GAP)):
        for version, schema in versions.items():
            schemas[SchemaKey.parse(f"iglu:com.acme/{family}/jsonschema/{version}")] = schema
    return InMemoryRegistry("acme", schemas)


def _resolver() -> Resolver:
    registry = _registry()
    ref = RepositoryRef(registry.name, 0, (), EmbeddedConnection("acme"))
    return Resolver([(ref, registry)], FixedClock(datetime(2026, 1, 1, tzinfo=UTC)))


def _column(uri: str, shred: ShredProperty = UE) -> MajorColumn:
    column = major_column(SchemaKey.parse(uri), shred, _resolver())
    assert isinstance(column, MajorColumn)
    return column


def _record(name: str, *subs: Field, mode: Mode = NUL) -> Field:
    return Field(name, FieldType.RECORD, mode, subs)


def test_newest_minor_merges_every_version_before_it() -> None:
    """1-1-0 alone gives the merge of 1-0-0, 1-0-2 and 1-1-0 (1-0-1 cannot merge)."""
    expected = _record(
        "unstruct_event_com_acme_basket_1",
        Field("id", S, REQ),
        Field("alpha", S, NUL),
        Field("qty", INT, NUL),
    )
    assert expected == _column("iglu:com.acme/basket/jsonschema/1-1-0").field


def test_first_version_alone_is_not_merged() -> None:
    """The first version's column is its own fields."""
    expected = _record("unstruct_event_com_acme_basket_1", Field("id", S, REQ))
    assert expected == _column("iglu:com.acme/basket/jsonschema/1-0-0").field


def test_fields_a_later_version_adds_come_after_the_first_versions_fields() -> None:
    """'alpha' (1-0-2) comes after 'id' (1-0-0) though it sorts first, and is NULLABLE."""
    field = _column("iglu:com.acme/basket/jsonschema/1-0-2").field
    assert field is not None
    assert [(f.name, f.mode) for f in field.fields] == [("id", REQ), ("alpha", NUL)]


def test_version_that_retypes_a_field_gets_a_recovery_column() -> None:
    """1-0-1 (id: number) goes to <column>_recovered_1_0_1_<hash>, typed by 1-0-1 alone."""
    name = "unstruct_event_com_acme_basket_1_recovered_1_0_1_" + recovery_hash(BASKET["1-0-1"])
    column = _column("iglu:com.acme/basket/jsonschema/1-0-1")
    expected = (name, True, _record(name, Field("id", F, REQ)))
    assert expected == (column.column, column.recovered, column.field)


def test_main_column_keeps_its_name_for_merged_versions() -> None:
    """A version that merges routes to the model's column."""
    column = _column("iglu:com.acme/basket/jsonschema/1-1-0")
    assert (column.column, column.recovered) == ("unstruct_event_com_acme_basket_1", False)


def test_contexts_element_starts_with_schema_version() -> None:
    """A contexts column's record has a REQUIRED STRING _schema_version first."""
    field = _column("iglu:com.acme/basket/jsonschema/1-0-2", CTX).field
    assert field is not None
    names = [(f.name, f.type, f.mode) for f in field.fields]
    expected = [("_schema_version", S, REQ), ("id", S, REQ), ("alpha", S, NUL)]
    assert (Mode.REPEATED, expected) == (field.mode, names)


def test_context_without_properties_is_repeated_json() -> None:
    """An open object as a context is a REPEATED JSON column, with no _schema_version."""
    field = _column("iglu:com.acme/open/jsonschema/1-0-0", CTX).field
    assert Field("contexts_com_acme_open_1", FieldType.JSON, Mode.REPEATED) == field


@pytest.mark.parametrize("shred", [pytest.param(UE, id="unstruct"), pytest.param(CTX, id="ctx")])
def test_closed_object_without_properties_has_no_column(shred: ShredProperty) -> None:
    """No properties and additionalProperties false: 2.x adds no column."""
    assert _column("iglu:com.acme/closed/jsonschema/1-0-0", shred).field is None


def test_version_without_column_adds_nothing_to_the_merge() -> None:
    """A closed empty object later in the series leaves the column as it was, but has none."""
    assert _column("iglu:com.acme/dropped/jsonschema/1-0-1").field is None


def test_versions_after_a_gap_are_found_by_probing() -> None:
    """A registry that cannot list: 2-1-0 still merges 2-0-0 (2-0-1 is missing)."""
    field = _column("iglu:com.acme/gap/jsonschema/2-1-0").field
    assert field is not None
    assert [(f.name, f.mode) for f in field.fields] == [("a", REQ), ("b", NUL)]


def test_probing_lists_only_existing_versions() -> None:
    """versions_up_to by look-ups gives 2-0-0 and 2-1-0."""
    key = SchemaKey.parse("iglu:com.acme/gap/jsonschema/2-1-0")
    assert (SchemaVer(2, 0, 0), SchemaVer(2, 1, 0)) == _resolver().versions_up_to(key)


def test_invalid_schema_in_the_series_is_an_iglu_failure() -> None:
    """A version up to the key that does not decode raises InvalidSchema."""
    with pytest.raises(InvalidSchema):
        major_column(SchemaKey.parse("iglu:com.acme/broken/jsonschema/1-0-1"), UE, _resolver())


def test_unknown_key_is_schema_not_found() -> None:
    """A key no repository has is SchemaNotFound, even when its model exists."""
    key = SchemaKey.parse("iglu:com.acme/basket/jsonschema/1-0-9")
    assert isinstance(major_column(key, UE, _resolver()), SchemaNotFound)
