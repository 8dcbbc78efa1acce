"""Building the BigQuery-JSON row of an event, or the bad row that replaces it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jsonschema
import orjson
import pytest
from plowline_core.badrows import IgluErrorRow, ParsingErrorRow, Processor, RuntimeErrorRow
from plowline_core.errors import RegistryUnavailable
from plowline_core.event.entities import MAX_NESTING
from plowline_core.event.model import EnrichedEvent, SelfDescribingData
from plowline_core.iglu.config import EmbeddedConnection, RepositoryRef
from plowline_core.iglu.key import SchemaKey
from plowline_core.iglu.resolver import Resolver, SchemaNotFound
from plowline_core.schema.entity import ColumnMode, EntityType, ShredProperty
from plowline_core.testing.clock import FixedClock
from plowline_core.testing.registry import InMemoryRegistry
from plowline_core.testing.tsv import enriched_line
from plowline_core.transform.row import RowBuilder, TransformedRow

DATA = Path(__file__).resolve().parents[2] / "data"
VECTORS = DATA / "conformance" / "vectors"
BADROW_SCHEMAS = VECTORS / "badrows" / "com.snowplowanalytics.snowplow.badrows"
PROCESSOR = Processor("plowline-loader", "0.1.0")

LINK_CLICK = SchemaKey.parse("iglu:com.snowplowanalytics.snowplow/link_click/jsonschema/1-0-1")
WEB_PAGE = SchemaKey.parse("iglu:com.snowplowanalytics.snowplow/web_page/jsonschema/1-0-0")
SESSION = SchemaKey.parse("iglu:com.snowplowanalytics.snowplow/client_session/jsonschema/1-0-1")
GEO = SchemaKey.parse("iglu:com.snowplowanalytics.snowplow/geolocation_context/jsonschema/1-1-0")
UNKNOWN = SchemaKey.parse("iglu:com.acme/unknown/jsonschema/1-0-0")


def _iglu_central() -> dict[SchemaKey, Any]:
    root = DATA / "iglu-central" / "schemas"
    schemas = {}
    for path in root.glob("*/*/*/*"):
        vendor, name, fmt, version = path.relative_to(root).parts
        schemas[SchemaKey.parse(f"iglu:{vendor}/{name}/{fmt}/{version}")] = orjson.loads(
            path.read_bytes()
        )
    return schemas


_SCHEMAS = _iglu_central()


def _resolver(registry: InMemoryRegistry | None = None) -> Resolver:
    registry = registry or InMemoryRegistry("Iglu Central", _SCHEMAS)
    ref = RepositoryRef(registry.name, 0, (), EmbeddedConnection("iglu-central"))
    return Resolver([(ref, registry)], FixedClock(datetime(2024, 5, 1, tzinfo=UTC)))


@pytest.fixture
def builder() -> RowBuilder:
    """A row builder in full (loader 1.x) column mode over Iglu Central."""
    return RowBuilder(_resolver())


def _vector(name: str) -> dict[str, Any]:
    result: dict[str, Any] = json.loads((VECTORS / name).read_text())
    return result


def _one_line(tsv: str) -> str:
    """Fold the vector's pretty-printed JSON onto one line (enriched TSV has no raw newlines)."""
    return tsv.replace("\n", " ")


def _event(
    contexts: tuple[SelfDescribingData, ...] = (),
    derived: tuple[SelfDescribingData, ...] = (),
    unstruct: SelfDescribingData | None = None,
) -> EnrichedEvent:
    atomic = {
        "collector_tstamp": "2024-05-01T10:00:00Z",
        "event_id": "5d8d9ed8-4a85-4e21-9b52-6e0b3d3b1ef2",
        "v_collector": "ssc-3.0.0",
        "v_etl": "enrich-4.0.0",
    }
    return EnrichedEvent(atomic, contexts, derived, unstruct)


def _badrow_schema(name: str, version: str) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(
        (BADROW_SCHEMAS / name / "jsonschema" / version).read_text()
    )
    return result


def _rows(result: object) -> Iterator[dict[str, Any]]:
    assert isinstance(result, TransformedRow), result
    yield orjson.loads(result.to_json())


@pytest.mark.parametrize(
    "name",
    [pytest.param("enriched_001.json", id="001"), pytest.param("enriched_002.json", id="002")],
)
def test_v1_row_matches_derived_vector(builder: RowBuilder, name: str) -> None:
    """The row of an enriched vector equals its derived BigQuery Loader 1.x row."""
    vector = _vector(name)
    (row,) = _rows(builder.transform_line(_one_line(vector["tsv"])))
    assert vector["expected_bigquery_v1_row_DERIVED"] == row


def test_v1_row_bytes_keep_loader_key_order(builder: RowBuilder) -> None:
    """Row bytes list atomic, load_tstamp, contexts, derived contexts, unstruct, in schema order."""
    vector = _vector("enriched_001.json")
    result = builder.transform_line(_one_line(vector["tsv"]))
    assert isinstance(result, TransformedRow)
    assert orjson.dumps(vector["expected_bigquery_v1_row_DERIVED"]) == result.to_json()


def test_row_types_name_every_entity(builder: RowBuilder) -> None:
    """The row's types are every (schema, shred property) its entity columns need."""
    vector = _vector("enriched_001.json")
    result = builder.transform_line(_one_line(vector["tsv"]))
    assert isinstance(result, TransformedRow)
    expected = frozenset(
        {
            EntityType(
                SchemaKey.parse("iglu:org.schema/WebPage/jsonschema/1-0-0"), ShredProperty.CONTEXTS
            ),
            EntityType(
                SchemaKey.parse("iglu:org.w3/PerformanceTiming/jsonschema/1-0-0"),
                ShredProperty.CONTEXTS,
            ),
            EntityType(
                SchemaKey.parse(
                    "iglu:com.snowplowanalytics.snowplow/ua_parser_context/jsonschema/1-0-0"
                ),
                ShredProperty.DERIVED_CONTEXTS,
            ),
            EntityType(LINK_CLICK, ShredProperty.UNSTRUCT_EVENT),
        }
    )
    assert (expected, "c6ef3124-b53a-4b13-a233-0088f79dcbcb") == (result.types, result.event_id)


def _micros_to_iso(micros: int) -> str:
    return datetime.fromtimestamp(micros / 1e6, UTC).isoformat().replace("+00:00", "Z")


def test_major_mode_entities_match_v2_vector_up_to_timestamp_encoding() -> None:
    """Major-mode entity columns equal loader 2.x's, except TIMESTAMPs stay ISO strings.

    loader 2.x writes TIMESTAMP as epoch micros (Storage Write API); insertAll rows keep
    ISO-8601 strings, so the v2 micros are converted before comparing.
    """
    vector = _vector("enriched_001.json")
    result = RowBuilder(_resolver(), ColumnMode.MAJOR).transform_line(_one_line(vector["tsv"]))
    assert isinstance(result, TransformedRow)
    expected = {
        k: v
        for k, v in vector["expected_bigquery_v2_row_DERIVED"].items()
        if k.startswith(("contexts_", "unstruct_"))
    }
    web_page = expected["contexts_org_schema_web_page_1"][0]
    web_page["date_published"] = _micros_to_iso(web_page["date_published"])
    actual = {k: v for k, v in result.data.items() if k.startswith(("contexts_", "unstruct_"))}
    assert expected == actual


def test_unknown_schema_is_an_iglu_error_with_the_lookup_history() -> None:
    """An entity whose schema no repository has becomes a loader_iglu_error bad row."""
    resolver = _resolver()
    event = _event(contexts=(SelfDescribingData(UNKNOWN, {"a": 1}),))
    result = RowBuilder(resolver).build(event)
    not_found = resolver.resolve(UNKNOWN)
    assert isinstance(not_found, SchemaNotFound)
    assert isinstance(result, IgluErrorRow)
    assert (not_found.to_failure(),) == result.failures


def test_every_cast_problem_of_the_event_is_listed(builder: RowBuilder) -> None:
    """Cast failures of several entities are all listed, each with its schema key."""
    session = {
        "userId": "u",
        "sessionIndex": "seven",
        "previousSessionId": None,
        "storageMechanism": "COOKIE_1",
    }
    event = _event(
        contexts=(SelfDescribingData(SESSION, session),),
        unstruct=SelfDescribingData(LINK_CLICK, {"elementId": 3}),
    )
    result = builder.build(event)
    assert isinstance(result, IgluErrorRow)
    expected = (
        {"schemaKey": SESSION.to_uri(), "key": "sessionId", "value": session},
        {"schemaKey": SESSION.to_uri(), "value": "seven", "expected": "INTEGER"},
        {"schemaKey": LINK_CLICK.to_uri(), "key": "targetUrl", "value": {"elementId": 3}},
    )
    assert expected == result.failures


def test_deviation_lone_null_in_required_is_a_bad_row_not_a_null_entity(
    builder: RowBuilder,
) -> None:
    """Deviation from loader 1.x: one null in a REQUIRED field is a bad row, never a NULL entity."""
    event = _event(unstruct=SelfDescribingData(LINK_CLICK, {"targetUrl": None, "elementId": "x"}))
    result = builder.build(event)
    assert isinstance(result, IgluErrorRow)
    expected = ({"schemaKey": LINK_CLICK.to_uri(), "value": None, "expected": "STRING"},)
    assert expected == result.failures


def test_iglu_error_row_validates_against_its_schema(builder: RowBuilder) -> None:
    """The bad row of a cast failure validates against loader_iglu_error/2-0-0."""
    event = _event(unstruct=SelfDescribingData(LINK_CLICK, {"elementId": 3}))
    result = builder.build(event)
    assert isinstance(result, IgluErrorRow)
    document = orjson.loads(result.to_json(PROCESSOR))
    jsonschema.Draft4Validator(_badrow_schema("loader_iglu_error", "2-0-0")).validate(
        document["data"]
    )
    expected = "iglu:com.snowplowanalytics.snowplow.badrows/loader_iglu_error/jsonschema/2-0-0"
    assert expected == document["schema"]


def test_registry_outage_propagates() -> None:
    """A failing registry raises RegistryUnavailable instead of making a bad row."""
    registry = InMemoryRegistry("flaky", _SCHEMAS, failing=True)
    event = _event(contexts=(SelfDescribingData(WEB_PAGE, {"id": "x"}),))
    with pytest.raises(RegistryUnavailable):
        RowBuilder(_resolver(registry)).build(event)


def test_unexpected_error_on_odd_data_is_a_runtime_error_row(builder: RowBuilder) -> None:
    """A number too large for a FLOAT becomes a loader_runtime_error bad row, not a crash."""
    event = _event(contexts=(SelfDescribingData(GEO, {"latitude": 10**400, "longitude": 1}),))
    result = builder.build(event)
    assert isinstance(result, RuntimeErrorRow)
    document = result.to_dict(PROCESSOR)
    jsonschema.Draft4Validator(_badrow_schema("loader_runtime_error", "1-0-1")).validate(
        document["data"]
    )
    expected = "OverflowError: int too large to convert to float"
    assert expected == result.failure


def test_contexts_and_derived_contexts_of_one_schema_are_concatenated(builder: RowBuilder) -> None:
    """A schema in both contexts and derived contexts keeps both items (deviation from 1.x)."""
    event = _event(
        contexts=(
            SelfDescribingData(WEB_PAGE, {"id": "a"}),
            SelfDescribingData(WEB_PAGE, {"id": "b"}),
        ),
        derived=(SelfDescribingData(WEB_PAGE, {"id": "c"}),),
    )
    (row,) = _rows(builder.build(event))
    expected = [{"id": "a"}, {"id": "b"}, {"id": "c"}]
    assert expected == row["contexts_com_snowplowanalytics_snowplow_web_page_1_0_0"]


def test_major_mode_context_items_carry_their_schema_version() -> None:
    """In major mode each context item starts with its full SchemaVer."""
    event = _event(contexts=(SelfDescribingData(WEB_PAGE, {"id": "a"}),))
    (row,) = _rows(RowBuilder(_resolver(), ColumnMode.MAJOR).build(event))
    expected = [{"_schema_version": "1-0-0", "id": "a"}]
    assert expected == row["contexts_com_snowplowanalytics_snowplow_web_page_1"]


def test_atomic_nulls_are_omitted_and_load_tstamp_is_auto(builder: RowBuilder) -> None:
    """An event without entities gives its atomic values plus load_tstamp AUTO."""
    event = _event()
    (row,) = _rows(builder.build(event))
    assert {**event.atomic, "load_tstamp": "AUTO"} == row


def test_unparseable_line_is_a_parsing_error_row(builder: RowBuilder) -> None:
    """A line that is not TSV gives the parser's loader_parsing_error bad row."""
    result = builder.transform_line("not an enriched event")
    assert isinstance(result, ParsingErrorRow)
    assert dict(result.failure) == {"type": "NotTSV"}


def test_schema_is_resolved_once_per_entity_type() -> None:
    """Repeated events do not look their schemas up again."""
    registry = InMemoryRegistry("Iglu Central", _SCHEMAS)
    builder = RowBuilder(_resolver(registry))
    event = _event(contexts=(SelfDescribingData(WEB_PAGE, {"id": "a"}),))
    for _ in range(3):
        builder.build(event)
    expected = 1
    assert expected == registry.lookups


def _nested_text(depth: int) -> str:
    return "[" * depth + "1" + "]" * depth


def _deep_line(uri: str, depth: int, key: str | None = None) -> str:
    data = _nested_text(depth) if key is None else f'{{"{key}":{_nested_text(depth)}}}'
    envelope = "iglu:com.snowplowanalytics.snowplow/unstruct_event/jsonschema/1-0-0"
    return enriched_line(
        unstruct_event=f'{{"schema":"{envelope}","data":{{"schema":"{uri}","data":{data}}}}}'
    )


@pytest.mark.parametrize(
    ("depth", "code"),
    [
        pytest.param(MAX_NESTING - 2, "iglu.cast", id="at-the-limit"),
        pytest.param(MAX_NESTING - 1, "parsing.row_decoding", id="one-past"),
        pytest.param(1000, "parsing.row_decoding", id="1000"),
    ],
)
def test_deeply_nested_entity_gives_a_bad_row_that_encodes(
    builder: RowBuilder, depth: int, code: str
) -> None:
    """Entity JSON nested past MAX_NESTING is a parsing bad row; up to it, a bad row that encodes."""
    result = builder.transform_line(_deep_line(LINK_CLICK.to_uri(), depth))
    assert code == result.code
    document = orjson.loads(result.to_json(PROCESSOR))
    schema = "loader_iglu_error" if code == "iglu.cast" else "loader_parsing_error"
    jsonschema.Draft4Validator(_badrow_schema(schema, "2-0-0")).validate(document["data"])


def test_deep_value_in_a_full_mode_string_column_is_kept_as_text(builder: RowBuilder) -> None:
    """In full mode a STRING sub-field takes a value nested to the limit as its JSON text."""
    line = _deep_line(LINK_CLICK.to_uri(), MAX_NESTING - 3, key="targetUrl")
    (row,) = _rows(builder.transform_line(line))
    column = row["unstruct_event_com_snowplowanalytics_snowplow_link_click_1_0_1"]
    assert _nested_text(MAX_NESTING - 3) == column["target_url"]
