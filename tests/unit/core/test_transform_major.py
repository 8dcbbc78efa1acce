"""Rows in 2.x (major) column mode: each entity to its column, as 2.x routes it."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jsonschema
import orjson
import pytest
from plowline_core.badrows import IgluErrorRow, Processor
from plowline_core.event.model import EnrichedEvent, SelfDescribingData
from plowline_core.iglu.config import EmbeddedConnection, RepositoryRef
from plowline_core.iglu.key import SchemaCriterion, SchemaKey
from plowline_core.iglu.resolver import Resolver
from plowline_core.schema.ddl_json import recovery_hash
from plowline_core.schema.entity import ColumnMode, EntityType, ShredProperty
from plowline_core.schema.legacy import ColumnRules
from plowline_core.testing.clock import FixedClock
from plowline_core.testing.registry import InMemoryRegistry
from plowline_core.transform.row import RowBuilder, TransformedRow

PROCESSOR = Processor("plowline-loader", "0.1.0")
BADROWS = (
    Path(__file__).resolve().parents[2]
    / "data/conformance/vectors/badrows/com.snowplowanalytics.snowplow.badrows"
)
_STR = {"type": "string"}
V100 = {"type": "object", "properties": {"id": _STR}, "required": ["id"]}
V101 = {"type": "object", "properties": {"id": {"type": "number"}}, "required": ["id"]}
V110 = {"type": "object", "properties": {"id": _STR, "qty": {"type": "integer"}}}
SCHEMAS = {
    "iglu:com.acme/basket/jsonschema/1-0-0": V100,
    "iglu:com.acme/basket/jsonschema/1-0-1": V101,
    "iglu:com.acme/basket/jsonschema/1-1-0": V110,
    "iglu:com.acme/closed/jsonschema/1-0-0": {"type": "object", "additionalProperties": False},
    "iglu:com.acme/broken/jsonschema/1-0-0": {"type": "object", "properties": ["x"]},
    "iglu:com.acme/a-b/jsonschema/1-0-0": V100,
    "iglu:com.acme/a_b/jsonschema/1-0-0": V100,
}
MAIN = "unstruct_event_com_acme_basket_1"
RECOVERY = f"{MAIN}_recovered_1_0_1_{recovery_hash(V101)}"


def _builder(
    skip: tuple[str, ...] = (), legacy: tuple[str, ...] = (), legacy_mode: bool = False
) -> RowBuilder:
    registry = InMemoryRegistry("acme", {SchemaKey.parse(u): s for u, s in SCHEMAS.items()})
    ref = RepositoryRef(registry.name, 0, (), EmbeddedConnection("acme"))
    resolver = Resolver([(ref, registry)], FixedClock(datetime(2026, 1, 1, tzinfo=UTC)))
    criteria = tuple(SchemaCriterion.parse(text) for text in skip)
    legacy_criteria = tuple(SchemaCriterion.parse(text) for text in legacy)
    rules = ColumnRules(criteria, legacy_criteria, legacy_mode)
    return RowBuilder(resolver, ColumnMode.MAJOR, rules=rules)


def _event(
    unstruct: tuple[str, Any] | None = None, contexts: tuple[tuple[str, Any], ...] = ()
) -> EnrichedEvent:
    atomic = {
        "collector_tstamp": "2026-01-01T10:00:00Z",
        "event_id": "5d8d9ed8-4a85-4e21-9b52-6e0b3d3b1ef2",
        "v_collector": "ssc-3.0.0",
        "v_etl": "enrich-4.0.0",
    }
    items = tuple(SelfDescribingData(SchemaKey.parse(u), d) for u, d in contexts)
    sdd = (
        None if unstruct is None else SelfDescribingData(SchemaKey.parse(unstruct[0]), unstruct[1])
    )
    return EnrichedEvent(atomic, items, (), sdd)


def _row(result: object) -> TransformedRow:
    assert isinstance(result, TransformedRow), result
    return result


def test_merged_version_goes_to_the_model_column() -> None:
    """A 1-1-0 entity is written to the model's column."""
    row = _row(_builder().build(_event(("iglu:com.acme/basket/jsonschema/1-1-0", {"id": "x"}))))
    assert row.data[MAIN] == {"id": "x", "qty": None}


def test_version_that_cannot_merge_goes_to_its_recovery_column() -> None:
    """A 1-0-1 entity (id retyped) is written to its recovery column, not the main one."""
    row = _row(_builder().build(_event(("iglu:com.acme/basket/jsonschema/1-0-1", {"id": 2.5}))))
    assert (row.data[RECOVERY], MAIN in row.data) == ({"id": 2.5}, False)


def test_entity_without_column_is_not_written_nor_announced() -> None:
    """An entity whose schema 2.x gives no column is dropped: no value, no type."""
    row = _row(_builder().build(_event(("iglu:com.acme/closed/jsonschema/1-0-0", {}))))
    assert ("unstruct_event_com_acme_closed_1" in row.data, row.types) == (False, frozenset())


def test_skipped_schema_is_neither_written_nor_a_failure() -> None:
    """A schema matching skipSchemas is left out of the row."""
    builder = _builder(skip=("iglu:com.acme/basket/jsonschema/1-*-*",))
    row = _row(builder.build(_event(("iglu:com.acme/basket/jsonschema/1-1-0", {"id": "x"}))))
    assert (MAIN in row.data, row.types) == (False, frozenset())


def test_schema_that_does_not_parse_is_an_iglu_failure() -> None:
    """An entity whose schema is not JSON Schema makes a loader_iglu_error InvalidSchema item."""
    result = _builder().build(_event(("iglu:com.acme/broken/jsonschema/1-0-0", {"x": 1})))
    assert isinstance(result, IgluErrorRow)
    expected = {
        "schemaKey": "iglu:com.acme/broken/jsonschema/1-0-0",
        "message": "Cannot be parsed as JSON Schema AST",
    }
    assert [expected] == list(result.failures)


def test_wrong_type_names_the_2x_type() -> None:
    """WrongType's expected reads 2.x's 'String', not 'STRING'."""
    result = _builder().build(_event(("iglu:com.acme/basket/jsonschema/1-0-0", {"id": 5})))
    assert isinstance(result, IgluErrorRow)
    assert [(f["expected"], f["value"]) for f in result.failures] == [("String", 5)]


def test_contexts_items_carry_their_schema_version_first() -> None:
    """Each context item starts with _schema_version, its own full version."""
    contexts = (
        ("iglu:com.acme/basket/jsonschema/1-0-0", {"id": "a"}),
        ("iglu:com.acme/basket/jsonschema/1-1-0", {"id": "b", "qty": 2}),
    )
    row = _row(_builder().build(_event(contexts=contexts)))
    expected = [
        {"_schema_version": "1-0-0", "id": "a"},
        {"_schema_version": "1-1-0", "id": "b", "qty": 2},
    ]
    assert expected == row.data["contexts_com_acme_basket_1"]


def test_two_schemas_on_one_column_fail_only_their_events() -> None:
    """a-b and a_b share a column: after the clash both fail, other events still load."""
    builder = _builder()
    first = builder.build(_event(("iglu:com.acme/a-b/jsonschema/1-0-0", {"id": "x"})))
    clash = builder.build(_event(("iglu:com.acme/a_b/jsonschema/1-0-0", {"id": "x"})))
    again = builder.build(_event(("iglu:com.acme/a-b/jsonschema/1-0-0", {"id": "x"})))
    other = builder.build(_event(("iglu:com.acme/basket/jsonschema/1-0-0", {"id": "x"})))
    kinds = [type(r).__name__ for r in (first, clash, again, other)]
    assert kinds == ["TransformedRow", "IgluErrorRow", "IgluErrorRow", "TransformedRow"]
    assert isinstance(clash, IgluErrorRow)
    message = "schemas [com.acme.a-b, com.acme.a_b] have clashing column names"
    assert [message] == [f["message"] for f in clash.failures]


@pytest.mark.parametrize(
    "uri",
    [
        pytest.param("iglu:com.acme/broken/jsonschema/1-0-0", id="invalid-schema"),
        pytest.param("iglu:com.acme/a_b/jsonschema/1-0-0", id="clash"),
    ],
)
def test_failure_validates_against_loader_iglu_error(uri: str) -> None:
    """The clash and InvalidSchema failures fit loader_iglu_error's InvalidSchema item."""
    schema_path = BADROWS / "loader_iglu_error" / "jsonschema" / "2-0-0"
    assert schema_path.is_file(), f"the bad-row schemas are carried in {BADROWS}"
    builder = _builder()
    builder.build(_event(("iglu:com.acme/a-b/jsonschema/1-0-0", {"id": "x"})))
    result = builder.build(_event((uri, {"id": "x"})))
    assert isinstance(result, IgluErrorRow)
    document = orjson.loads(result.to_json(PROCESSOR))
    jsonschema.Draft4Validator(orjson.loads(schema_path.read_bytes())).validate(document["data"])


def test_types_name_the_routed_entities() -> None:
    """The row's types are the entity types it holds."""
    row = _row(_builder().build(_event(("iglu:com.acme/basket/jsonschema/1-0-1", {"id": 1}))))
    key = SchemaKey.parse("iglu:com.acme/basket/jsonschema/1-0-1")
    assert frozenset({EntityType(key, ShredProperty.UNSTRUCT_EVENT)}) == row.types


def test_legacy_schema_gets_its_1x_column_per_full_version() -> None:
    """A schema in legacyColumns is written to <v2 name>_<rev>_<add>, cast as 1.x casts."""
    builder = _builder(legacy=("iglu:com.acme/basket/jsonschema/1-*-*",))
    row = _row(builder.build(_event(("iglu:com.acme/basket/jsonschema/1-0-1", {"id": 2.5}))))
    assert {k: v for k, v in row.data.items() if k.startswith("unstruct_")} == {
        "unstruct_event_com_acme_basket_1_0_1": {"id": 2.5}
    }


@pytest.mark.parametrize(
    ("uri", "data", "expected"),
    [
        pytest.param("iglu:com.acme/basket/jsonschema/1-1-0", {"qty": "x"}, "Long", id="integer"),
        pytest.param("iglu:com.acme/basket/jsonschema/1-0-1", {"id": "x"}, "Double", id="number"),
        pytest.param("iglu:com.acme/basket/jsonschema/1-0-0", {"id": None}, "String", id="string"),
    ],
)
def test_a_legacy_wrong_type_names_the_2x_type(uri: str, data: Any, expected: str) -> None:
    """2.x casts a legacy column through its v2 type: WrongType reads Long, Double, String."""
    builder = _builder(legacy_mode=True)

    result = builder.build(_event((uri, data)))

    assert isinstance(result, IgluErrorRow)
    assert [expected] == [f["expected"] for f in result.failures]


def test_legacy_contexts_have_no_schema_version() -> None:
    """Legacy contexts items are the entity's values alone."""
    builder = _builder(legacy_mode=True)
    contexts = (("iglu:com.acme/basket/jsonschema/1-0-0", {"id": "a"}),)
    row = _row(builder.build(_event(contexts=contexts)))
    assert row.data["contexts_com_acme_basket_1_0_0"] == [{"id": "a"}]


def test_skip_beats_legacy() -> None:
    """A schema both skipped and legacy is skipped."""
    uri = "iglu:com.acme/basket/jsonschema/1-*-*"
    row = _row(
        _builder(skip=(uri,), legacy_mode=True).build(
            _event(("iglu:com.acme/basket/jsonschema/1-0-0", {"id": "x"}))
        )
    )
    assert frozenset() == row.types


def test_column_of_names_the_recovery_column_the_rows_use() -> None:
    """column_of gives the routed column (here the recovery one) once the key was seen."""
    builder = _builder()
    key = SchemaKey.parse("iglu:com.acme/basket/jsonschema/1-0-1")
    entity = EntityType(key, ShredProperty.UNSTRUCT_EVENT)
    before = builder.column_of(entity)
    builder.build(_event(("iglu:com.acme/basket/jsonschema/1-0-1", {"id": 1})))
    assert (before, builder.column_of(entity)) == (None, RECOVERY)


def test_bignumeric_field_takes_numbers() -> None:
    """A decimal with ten places is BIGNUMERIC and its values are numbers, not a WrongType."""
    from plowline_core.schema.field import Field, FieldType, Mode
    from plowline_core.transform.cast import cast

    field = Field("x", FieldType.BIGNUMERIC, Mode.REQUIRED)
    result = cast(field, 0.0000000001, ColumnMode.MAJOR)
    assert (result.value, tuple(result.errors)) == (0.0000000001, ())


@pytest.mark.parametrize(
    ("text", "fits"),
    [
        pytest.param("12.34", True, id="two-places"),
        pytest.param("87.90000", True, id="trailing-zeros"),
        pytest.param("1234567890.12", True, id="ten-digits"),
        pytest.param("12.3456", False, id="four-places"),
        pytest.param("10000000000000000", False, id="seventeen-digits"),
    ],
)
def test_money_fields_must_fit_numeric_18_2(text: str, fits: bool) -> None:
    """A money value with more than 2 places or 16 integer digits fails the event, as in 2.x."""
    from plowline_core.testing.tsv import enriched_line

    result = _builder().transform_line(enriched_line(tr_total=text, ti_price=text))
    if fits:
        assert isinstance(result, TransformedRow), result
        return
    assert isinstance(result, IgluErrorRow)
    failures = [(f["schemaKey"], f["expected"]) for f in result.failures]
    atomic = ("iglu:com.snowplowanalytics.snowplow/atomic/jsonschema/1-0-0", "Decimal(Digits18,2)")
    assert [atomic, atomic] == failures


def test_money_fields_are_not_checked_in_full_mode() -> None:
    """Loader 1.x columns are FLOAT: four places load as they are."""
    from plowline_core.testing.tsv import enriched_line

    builder = RowBuilder(_builder()._resolver)
    assert isinstance(builder.transform_line(enriched_line(tr_total="12.3456")), TransformedRow)
