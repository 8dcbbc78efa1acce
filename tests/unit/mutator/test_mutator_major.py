"""The mutator in 2.x (major) mode adds the columns the loader routes entities to."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from typing import Any

from plowline_core.iglu.config import EmbeddedConnection, RepositoryRef
from plowline_core.iglu.key import SchemaCriterion, SchemaKey
from plowline_core.iglu.resolver import Resolver
from plowline_core.schema.ddl_json import recovery_hash
from plowline_core.schema.entity import ColumnMode, EntityType, ShredProperty
from plowline_core.schema.legacy import NO_RULES, ColumnRules
from plowline_core.testing.clock import FixedClock
from plowline_core.testing.registry import InMemoryRegistry
from plowline_core.testing.table import InMemoryTableSchemaStore
from plowline_mutator.mutation import Mutator, Rejection

_STR = {"type": "string"}
V100 = {"type": "object", "properties": {"zeta": _STR, "alpha": _STR}, "required": ["zeta"]}
V101 = {"type": "object", "properties": {"zeta": {"type": "integer"}}}
V110 = {"type": "object", "properties": {"zeta": _STR, "alpha": _STR, "beta": _STR}}
SCHEMAS = {
    "iglu:com.acme/cart/jsonschema/1-0-0": V100,
    "iglu:com.acme/cart/jsonschema/1-0-1": V101,
    "iglu:com.acme/cart/jsonschema/1-1-0": V110,
    "iglu:com.acme/broken/jsonschema/1-0-0": {"type": "objekt"},
}


def _mutator(rules: ColumnRules = NO_RULES) -> tuple[Mutator, InMemoryTableSchemaStore]:
    registry = InMemoryRegistry("acme", {SchemaKey.parse(u): s for u, s in SCHEMAS.items()})
    ref = RepositoryRef("acme", 0, (), EmbeddedConnection("acme"))
    resolver = Resolver([(ref, registry)], FixedClock(datetime(2026, 1, 1, tzinfo=UTC)))
    store = InMemoryTableSchemaStore(())
    return Mutator(resolver, store, ColumnMode.MAJOR, threading.Lock(), rules=rules), store


def _types(*uris: str) -> list[EntityType]:
    return [EntityType(SchemaKey.parse(u), ShredProperty.UNSTRUCT_EVENT) for u in uris]


def _table(store: InMemoryTableSchemaStore) -> dict[str, Any]:
    return {f.name: [(s.name, s.mode.value) for s in f.fields] for f in store.fields()}


def test_minor_versions_widen_one_column_and_a_retyped_one_gets_its_recovery_column() -> None:
    """1-0-0, 1-0-1 and 1-1-0 give the merged model column plus 1-0-1's recovery column."""
    mutator, store = _mutator()
    mutator.add_types(_types(*(u for u in SCHEMAS if "cart" in u)))
    recovery = f"unstruct_event_com_acme_cart_1_recovered_1_0_1_{recovery_hash(V101)}"
    expected = {
        "unstruct_event_com_acme_cart_1": [
            ("alpha", "NULLABLE"),
            ("zeta", "REQUIRED"),
            ("beta", "NULLABLE"),
        ],
        recovery: [("zeta", "NULLABLE")],
    }
    assert expected == _table(store)


def test_legacy_column_sorts_fields_by_name() -> None:
    """A legacy schema gets its 1.x column, sub-fields by name (not REQUIRED first)."""
    rules = ColumnRules(
        legacy_columns=(SchemaCriterion.parse("iglu:com.acme/cart/jsonschema/1-*-*"),)
    )
    mutator, store = _mutator(rules)
    mutator.add_types(_types("iglu:com.acme/cart/jsonschema/1-0-0"))
    expected = {"unstruct_event_com_acme_cart_1_0_0": [("alpha", "NULLABLE"), ("zeta", "REQUIRED")]}
    assert expected == _table(store)


def test_skipped_schema_adds_nothing() -> None:
    """A schema in skipSchemas needs no column."""
    rules = ColumnRules(
        skip_schemas=(SchemaCriterion.parse("iglu:com.acme/cart/jsonschema/1-*-*"),)
    )
    mutator, store = _mutator(rules)
    result = mutator.add_types(_types("iglu:com.acme/cart/jsonschema/1-1-0"))
    assert (_table(store), result.rejected) == ({}, ())


def test_schema_that_does_not_parse_is_rejected_as_invalid() -> None:
    """A schema that is not JSON Schema is rejected (invalid_schema), the others go ahead."""
    mutator, store = _mutator()
    result = mutator.add_types(
        _types("iglu:com.acme/broken/jsonschema/1-0-0", "iglu:com.acme/cart/jsonschema/1-0-0")
    )
    kinds = [item.kind for item in result.rejected]
    assert (
        kinds,
        list(_table(store)),
    ) == ([Rejection.INVALID_SCHEMA], ["unstruct_event_com_acme_cart_1"])
