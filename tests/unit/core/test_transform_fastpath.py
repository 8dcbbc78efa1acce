"""The fused path of RowBuilder.transform_line gives exactly what parse + build give."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from plowline_core.badrows import Processor
from plowline_core.event.atomic import decode_valid_atomic, decode_valid_line
from plowline_core.event.fields import ENRICHED_FIELDS, Kind
from plowline_core.event.model import EnrichedEvent
from plowline_core.event.parser import parse
from plowline_core.iglu.config import EmbeddedConnection, RepositoryRef
from plowline_core.iglu.key import SchemaKey
from plowline_core.iglu.resolver import Resolver
from plowline_core.schema.entity import ColumnMode
from plowline_core.testing.clock import FixedClock
from plowline_core.testing.registry import InMemoryRegistry
from plowline_core.testing.tsv import enriched_fields, enriched_line
from plowline_core.transform.row import RowBuilder, TransformedRow

SCHEMAS = Path(__file__).resolve().parents[2] / "data" / "iglu-central" / "schemas"
PROCESSOR = Processor("plowline-loader", "0.1.0")
WEB_PAGE = "iglu:com.snowplowanalytics.snowplow/web_page/jsonschema/1-0-0"
SESSION = "iglu:com.snowplowanalytics.snowplow/client_session/jsonschema/1-0-1"
GEO = "iglu:com.snowplowanalytics.snowplow/geolocation_context/jsonschema/1-1-0"
LINK_CLICK = "iglu:com.snowplowanalytics.snowplow/link_click/jsonschema/1-0-1"
UNKNOWN = "iglu:com.acme/unknown/jsonschema/1-0-0"
KNOWN = (WEB_PAGE, SESSION, GEO, LINK_CLICK)


def _builder(mode: ColumnMode) -> RowBuilder:
    registry = InMemoryRegistry("Iglu Central")
    for uri in KNOWN:
        key = SchemaKey.parse(uri)
        registry.add(key, orjson.loads((SCHEMAS / key.to_path()).read_bytes()))
    ref = RepositoryRef(registry.name, 0, (), EmbeddedConnection("iglu-central"))
    builder = RowBuilder(Resolver([(ref, registry)], FixedClock(datetime(2024, 5, 1, tzinfo=UTC))))
    if mode is ColumnMode.MAJOR:
        builder = RowBuilder(builder._resolver, mode)
    # Warm the plans through the careful path, as a first batch would.
    for uri in KNOWN:
        builder.transform_line(enriched_line(contexts=[(uri, {})], derived_contexts=[(uri, {})]))
        builder.transform_line(enriched_line(unstruct_event=(uri, {})))
    return builder


BUILDERS = {mode: _builder(mode) for mode in ColumnMode}

_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)


def _data(odd: st.SearchStrategy[Any]) -> dict[str, st.SearchStrategy[Any]]:
    """Return entity data per schema: valid, then ``odd`` values in some properties."""
    return {
        WEB_PAGE: st.fixed_dictionaries({"id": st.uuids().map(str) | odd}),
        SESSION: st.fixed_dictionaries(
            {
                "userId": st.uuids().map(str),
                "sessionId": st.uuids().map(str),
                "sessionIndex": st.integers(0, 2**31) | odd,
                "storageMechanism": st.sampled_from(["COOKIE_1", "LOCAL_STORAGE"]),
            },
            optional={"previousSessionId": st.none() | st.uuids().map(str), "extra": odd},
        ),
        GEO: st.fixed_dictionaries(
            {"latitude": st.floats(-90, 90) | st.integers(-90, 90) | odd},
            optional={"longitude": st.floats(-180, 180), "altitude": st.none() | odd},
        ),
        LINK_CLICK: st.fixed_dictionaries(
            {"targetUrl": st.text(max_size=20)},
            optional={"elementClasses": st.lists(st.text(max_size=5)) | odd, "elementId": odd},
        ),
        UNKNOWN: _JSON,
    }


def _entities(odd: bool) -> st.SearchStrategy[dict[str, Any]]:
    data = _data(_JSON if odd else st.nothing())
    uris = [*KNOWN, UNKNOWN] if odd else list(KNOWN)
    return st.sampled_from(uris).flatmap(
        lambda uri: data[uri].map(lambda value: {"schema": uri, "data": value})
    )


_ENTITIES = {odd: _entities(odd) for odd in (False, True)}


@st.composite
def _timestamp(draw: st.DrawFn, unusual: bool) -> str:
    moment = draw(st.datetimes(datetime(1, 1, 1), datetime(9999, 12, 31)))
    digits = draw(st.sampled_from([0, 3, 6, 9] if unusual else [0, 3]))
    fraction = f".{draw(st.integers(0, 10**digits - 1)):0{digits}d}" if digits else ""
    separator = draw(st.sampled_from([" ", "T"] if unusual else [" "]))
    return moment.replace(microsecond=0).isoformat(separator) + fraction


def _texts(unusual: bool) -> dict[Kind, st.SearchStrategy[str]]:
    """Return texts of each kind as enrich writes them, or also the rarer ones the SDK reads."""
    texts: dict[Kind, st.SearchStrategy[str]] = {
        Kind.STRING: st.text(st.characters(blacklist_characters="\t", codec="utf-8"), max_size=9),
        Kind.INT: st.integers(-(10**8), 10**8).map(str),
        Kind.DOUBLE: st.floats(-1e6, 1e6).map(repr) | st.sampled_from(["1.", ".5", "-0", "1e5"]),
        Kind.BOOLEAN: st.sampled_from(["0", "1"]),
        Kind.UUID: st.uuids().map(str),
        Kind.TIMESTAMP: _timestamp(unusual),
    }
    if unusual:
        texts[Kind.INT] |= st.integers(-(2**31), 2**31 - 1).map(str) | st.just("+7")
        texts[Kind.DOUBLE] |= st.floats(allow_nan=False).map(repr)
        texts[Kind.UUID] = st.uuids().map(lambda u: str(u).upper())
    return texts


_TEXTS = {unusual: _texts(unusual) for unusual in (False, True)}
_ODD = st.sampled_from(
    ["", " 1", "1_0", "NaN", "1e999", "0x1p3", "٣", "2147483648", "2013-02-29 00:00:00", "{}"]
)
_ATOMIC = [field for field in ENRICHED_FIELDS if not field.is_entity]


@st.composite
def _line(draw: st.DrawFn, odd: bool) -> str:
    overrides: dict[str, Any] = {}
    texts = _TEXTS[draw(st.booleans())]
    for field in _ATOMIC:
        if field.required or draw(st.booleans()):
            overrides[field.name] = draw(texts[field.kind])
        else:
            overrides[field.name] = None
    odd_entities = _ENTITIES[draw(st.booleans())]
    for name in ("contexts", "derived_contexts"):
        entities = draw(st.lists(odd_entities, max_size=3))
        overrides[name] = [(e["schema"], e["data"]) for e in entities] or None
    if draw(st.booleans()):
        entity = draw(odd_entities)
        overrides["unstruct_event"] = (entity["schema"], entity["data"])
    fields = enriched_fields(**overrides)
    if odd:
        position = draw(st.integers(0, len(fields) - 1))
        fields[position] = draw(_ODD | texts[Kind.STRING] | _JSON.map(repr))
    return "\t".join(fields)


def _outcome(result: object) -> tuple[Any, ...]:
    if isinstance(result, TransformedRow):
        return ("row", result.event_id, result.to_json(), result.types)
    return (type(result).__name__, result.to_json(PROCESSOR))  # type: ignore[attr-defined]


def _careful(builder: RowBuilder, line: str) -> tuple[Any, ...]:
    event = parse(line)
    return _outcome(builder.build(event) if isinstance(event, EnrichedEvent) else event)


_SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_SETTINGS
@given(_line(odd=False), st.sampled_from(list(ColumnMode)))
def test_fused_and_careful_paths_agree_on_generated_lines(line: str, mode: ColumnMode) -> None:
    """Lines of random atomic values and entities give the same bytes by both paths."""
    builder = BUILDERS[mode]
    assert _careful(builder, line) == _outcome(builder.transform_line(line))


@_SETTINGS
@given(_line(odd=True), st.sampled_from(list(ColumnMode)))
def test_fused_and_careful_paths_agree_on_mutated_lines(line: str, mode: ColumnMode) -> None:
    """Lines with one field replaced by odd text give the same row or bad row by both paths."""
    builder = BUILDERS[mode]
    assert _careful(builder, line) == _outcome(builder.transform_line(line))


@_SETTINGS
@given(st.lists(_ODD | _TEXTS[True][Kind.STRING], min_size=129, max_size=133))
def test_fused_and_careful_paths_agree_on_arbitrary_fields(fields: list[str]) -> None:
    """Arbitrary field lists of about the right count give the same outcome by both paths."""
    line = "\t".join(fields)
    builder = BUILDERS[ColumnMode.FULL]
    assert _careful(builder, line) == _outcome(builder.transform_line(line))


@_SETTINGS
@given(_line(odd=False))
def test_valid_atomic_values_are_decoded_by_the_fast_decoder_as_by_parse(line: str) -> None:
    """When the fast atomic decoder answers, it answers what parse gives."""
    atomic = decode_valid_atomic(line.split("\t"))
    event = parse(line)
    if atomic is not None:
        assert isinstance(event, EnrichedEvent)
        assert list(event.atomic.items()) == list(atomic.items())


def test_an_enrich_line_with_known_entities_takes_the_fused_path() -> None:
    """A typical valid line is handled by the fused path (not only by the fallback)."""
    line = enriched_line(
        contexts=[(WEB_PAGE, {"id": "a"}), (GEO, {"latitude": 1.5, "longitude": 2})],
        derived_contexts=[(SESSION, _SESSION_DATA)],
        unstruct_event=(LINK_CLICK, {"targetUrl": "https://example.com"}),
        dvce_sent_tstamp="2024-05-01 10:00:00.000",
        geo_latitude="-1.5e-3",
        txn_id="+12",
    )
    valid = decode_valid_line(line)
    assert valid is not None
    row = BUILDERS[ColumnMode.FULL]._fused(*valid)
    assert row is not None
    assert _careful(BUILDERS[ColumnMode.FULL], line) == _outcome(row)


_SESSION_DATA = {
    "userId": "c6ef3124-b53a-4b13-a233-0088f79dcbcb",
    "sessionId": "c6ef3124-b53a-4b13-a233-0088f79dcbcc",
    "sessionIndex": 3,
    "storageMechanism": "COOKIE_1",
}


_CONTEXTS = "iglu:com.snowplowanalytics.snowplow/contexts/jsonschema/1-0-0"
_UNSTRUCT = "iglu:com.snowplowanalytics.snowplow/unstruct_event/jsonschema/1-0-0"


def _json(document: Any) -> str:
    return orjson.dumps(document).decode()


@pytest.mark.parametrize(
    ("field", "text"),
    [
        pytest.param("contexts", "[]", id="contexts-array"),
        pytest.param("contexts", '"x"', id="contexts-string"),
        pytest.param("contexts", _json({"schema": _CONTEXTS}), id="contexts-no-data"),
        pytest.param("contexts", _json({"data": []}), id="contexts-no-schema"),
        pytest.param(
            "contexts", _json({"schema": _CONTEXTS, "data": {}}), id="contexts-data-object"
        ),
        pytest.param(
            "contexts", _json({"schema": _CONTEXTS, "data": ""}), id="contexts-data-string"
        ),
        pytest.param("contexts", _json({"schema": [1], "data": []}), id="contexts-schema-array"),
        pytest.param(
            "contexts", _json({"schema": _CONTEXTS, "data": [[WEB_PAGE]]}), id="item-array"
        ),
        pytest.param("contexts", _json({"schema": _CONTEXTS, "data": [None]}), id="item-null"),
        pytest.param(
            "contexts",
            _json({"schema": _CONTEXTS, "data": [{"schema": WEB_PAGE}]}),
            id="item-no-data",
        ),
        pytest.param(
            "derived_contexts",
            _json({"schema": _CONTEXTS, "data": [{"schema": [WEB_PAGE], "data": {}}]}),
            id="item-schema-array",
        ),
        pytest.param(
            "derived_contexts",
            _json({"schema": _CONTEXTS, "data": [{"schema": UNKNOWN, "data": {}}]}),
            id="item-unknown",
        ),
        pytest.param("unstruct_event", _json({"schema": _UNSTRUCT}), id="unstruct-no-data"),
        pytest.param(
            "unstruct_event", _json({"schema": _UNSTRUCT, "data": []}), id="unstruct-array"
        ),
        pytest.param(
            "unstruct_event",
            _json({"schema": _UNSTRUCT, "data": {"schema": LINK_CLICK}}),
            id="unstruct-entity-no-data",
        ),
        pytest.param(
            "unstruct_event",
            _json({"data": {"schema": LINK_CLICK, "data": {}}}),
            id="unstruct-no-schema",
        ),
    ],
)
def test_irregular_entity_json_gets_the_careful_outcome(field: str, text: str) -> None:
    """Entity JSON that is not as enrich writes it gets what parse + build give."""
    fields = enriched_fields()
    fields[next(f.index - 1 for f in ENRICHED_FIELDS if f.name == field)] = text
    line = "\t".join(fields)
    for builder in BUILDERS.values():
        assert _careful(builder, line) == _outcome(builder.transform_line(line))
