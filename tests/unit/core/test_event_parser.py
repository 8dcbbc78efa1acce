"""The enriched TSV parser against the Scala analytics SDK's vectors and rules."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from plowline_core.badrows import FailureCode, ParsingErrorRow
from plowline_core.event.fields import ENRICHED_FIELDS
from plowline_core.event.model import EnrichedEvent, SelfDescribingData
from plowline_core.event.parser import parse, parse_bytes
from plowline_core.iglu.key import SchemaKey
from plowline_core.testing.tsv import contexts_field, enriched_fields, enriched_line

_ATOMIC_NAMES = {field.name for field in ENRICHED_FIELDS if not field.is_entity}


def _vector(conformance_dir: Path, name: str) -> dict[str, Any]:
    result: dict[str, Any] = json.loads((conformance_dir / "vectors" / name).read_text())
    return result


def _event(line: str, **options: Any) -> EnrichedEvent:
    result = parse(line, **options)
    assert isinstance(result, EnrichedEvent), result
    return result


def _failure(line: str, **options: Any) -> Any:
    result = parse(line, **options)
    assert isinstance(result, ParsingErrorRow), result
    return result.failure


def _errors(**overrides: Any) -> list[dict[str, str]]:
    failure = _failure(enriched_line(**overrides))
    errors: list[dict[str, str]] = failure["errors"]
    return errors


def _snake(text: str) -> str:
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", text).replace(".", "_").lower()


def _shredded(prefix: str, entities: tuple[SelfDescribingData, ...]) -> dict[str, Any]:
    """Group entities the way the SDK's lossy JSON does (one key per vendor/name/model)."""
    grouped: dict[str, Any] = {}
    for entity in entities:
        key = entity.schema
        column = f"{prefix}_{_snake(key.vendor)}_{_snake(key.name)}_{key.version.model}"
        grouped.setdefault(column, []).append({"_schema_version": str(key.version), **entity.data})
    return grouped


@pytest.mark.parametrize("name", ["enriched_001.json", "enriched_002.json"])
def test_vector_atomic_values_match_sdk(conformance_dir: Path, name: str) -> None:
    """Atomic values equal the SDK's JSON for the vector, NULLs omitted."""
    vector = _vector(conformance_dir, name)
    expected = {k: v for k, v in vector["expected"].items() if k in _ATOMIC_NAMES and v is not None}
    assert expected == _event(vector["tsv"]).atomic


@pytest.mark.parametrize("name", ["enriched_001.json", "enriched_002.json"])
def test_vector_atomic_values_match_v1_row(conformance_dir: Path, name: str) -> None:
    """Atomic values equal the derived v1 BigQuery row, in TSV order."""
    vector = _vector(conformance_dir, name)
    row = vector["expected_bigquery_v1_row_DERIVED"]
    expected = [(k, v) for k, v in row.items() if k in _ATOMIC_NAMES]
    assert expected == list(_event(vector["tsv"]).atomic.items())


@pytest.mark.parametrize("name", ["enriched_001.json", "enriched_002.json"])
def test_vector_entities_match_sdk(conformance_dir: Path, name: str) -> None:
    """Contexts, derived contexts and the unstruct event equal the SDK's shredded JSON."""
    vector = _vector(conformance_dir, name)
    expected = {
        k: v
        for k, v in vector["expected"].items()
        if k.startswith(("contexts_", "unstruct_event_"))
    }
    event = _event(vector["tsv"])
    actual = {
        **_shredded("contexts", event.contexts),
        **_shredded("contexts", event.derived_contexts),
    }
    if event.unstruct_event is not None:
        key = event.unstruct_event.schema
        column = f"unstruct_event_{_snake(key.vendor)}_{_snake(key.name)}_{key.version.model}"
        actual[column] = event.unstruct_event.data
    assert expected == actual


def test_vector_helper_entities_keep_versions(conformance_dir: Path) -> None:
    """Two versions of one context stay two entities, in order, as the SDK's helper shows."""
    vector = _vector(conformance_dir, "enriched_005.json")
    event = _event(vector["tsv"])
    expected = {
        "contexts." + k: v for k, v in vector["expected"]["contexts.toShreddedJson"].items()
    }
    assert expected == {
        "contexts." + k: v for k, v in _shredded("contexts", event.contexts).items()
    }


def test_vector_invalid_values_accumulate(conformance_dir: Path) -> None:
    """Every invalid value is reported, in field order, with the SDK 3.x messages."""
    vector = _vector(conformance_dir, "enriched_003.json")
    assert vector["expected_error"] == _failure(vector["tsv"])


def test_vector_bad_row_shape(conformance_dir: Path) -> None:
    """The parsing bad row carries the failure and the raw line as the vector derives."""
    vector = _vector(conformance_dir, "enriched_003.json")
    expected = vector["expected_bad_row_DERIVED"]["data"]
    result = parse(vector["tsv"])
    assert isinstance(result, ParsingErrorRow)
    assert (expected["failure"], expected["payload"]) == (result.failure, result.payload)


def _count_cases(conformance_dir: Path) -> list[tuple[str, Any]]:
    vector = _vector(conformance_dir, "enriched_004.json")
    cases = [(vector["tsv"], vector["expected_error"])]
    return cases + [(case["tsv"], case["expected_error"]) for case in vector["more_cases"]]


def test_vector_field_counts(conformance_dir: Path) -> None:
    """Too many, too few and no tabs give FieldNumberMismatch / NotTSV as the SDK does."""
    cases = _count_cases(conformance_dir)
    assert [expected for _, expected in cases] == [_failure(line) for line, _ in cases]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        pytest.param("", {"type": "NotTSV"}, id="empty"),
        pytest.param("\t", {"type": "FieldNumberMismatch", "fieldCount": 2}, id="one-tab"),
        pytest.param(
            "\t" * 131, {"type": "FieldNumberMismatch", "fieldCount": 132}, id="trailing-empty"
        ),
    ],
)
def test_field_count_edges(line: str, expected: dict[str, Any]) -> None:
    """Trailing empty fields count, and an empty message is not TSV."""
    assert expected == _failure(line)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        pytest.param(
            {"txn_id": "2147483648"}, "Cannot parse key txn_id into integer", id="int-overflow"
        ),
        pytest.param({"txn_id": " 1"}, "Cannot parse key txn_id into integer", id="int-space"),
        pytest.param(
            {"txn_id": "1_000"}, "Cannot parse key txn_id into integer", id="int-underscore"
        ),
        pytest.param({"txn_id": "1.0"}, "Cannot parse key txn_id into integer", id="int-decimal"),
        pytest.param(
            {"se_value": "1_0"}, "Cannot parse key se_value into double", id="double-underscore"
        ),
        pytest.param(
            {"se_value": "inf"}, "Cannot parse key se_value into double", id="double-python-inf"
        ),
        pytest.param(
            {"br_cookies": "true"}, "Cannot parse key br_cookies into boolean", id="bool-word"
        ),
        pytest.param(
            {"event_id": "c6ef3124-b53a"}, "Cannot parse key event_id into UUID", id="uuid-short"
        ),
        pytest.param(
            {"etl_tstamp": "2013-02-29 00:00:00"},
            "Cannot parse key etl_tstamp into datetime",
            id="not-leap",
        ),
        pytest.param(
            {"etl_tstamp": "2013-11-26"},
            "Cannot parse key etl_tstamp into datetime",
            id="date-only",
        ),
        pytest.param(
            {"etl_tstamp": "2013-11-26 00:02:05Z"},
            "Cannot parse key etl_tstamp into datetime",
            id="zoned",
        ),
        pytest.param(
            {"etl_tstamp": "2013-11-26 00:02:05.1234567890"},
            "Cannot parse key etl_tstamp into datetime",
            id="ten-digits",
        ),
        pytest.param({"event_id": ""}, "Field event_id cannot be empty", id="empty-event-id"),
        pytest.param({"v_etl": None}, "Field v_etl cannot be empty", id="empty-v-etl"),
    ],
)
def test_invalid_value_messages(overrides: dict[str, Any], message: str) -> None:
    """Each kind of invalid value gets the SDK's message and keeps the raw value."""
    ((name, value),) = overrides.items()
    expected = [{"type": "InvalidValue", "key": name, "value": value or "", "message": message}]
    assert expected == _errors(**overrides)


@pytest.mark.parametrize(
    ("field", "text", "expected"),
    [
        pytest.param(
            "etl_tstamp", "2013-11-26 00:02:05.000", "2013-11-26T00:02:05Z", id="zero-millis"
        ),
        pytest.param(
            "etl_tstamp", "2013-11-26 00:02:05.5", "2013-11-26T00:02:05.500Z", id="one-digit"
        ),
        pytest.param(
            "etl_tstamp",
            "2013-11-26 00:02:05.1234",
            "2013-11-26T00:02:05.123400Z",
            id="four-digits",
        ),
        pytest.param(
            "etl_tstamp",
            "2013-11-26 00:02:05.123456789",
            "2013-11-26T00:02:05.123456789Z",
            id="nanos",
        ),
        pytest.param("etl_tstamp", "2013-11-26T00:02:05", "2013-11-26T00:02:05Z", id="iso-t"),
        pytest.param("etl_tstamp", "2016-12-31 23:59:60", "2016-12-31T23:59:59Z", id="leap-second"),
        pytest.param("etl_tstamp", "2016-12-31 24:00:00", "2017-01-01T00:00:00Z", id="end-of-day"),
        pytest.param("etl_tstamp", "2016-02-29 00:00:00", "2016-02-29T00:00:00Z", id="leap-day"),
        pytest.param(
            "event_id",
            "C6EF3124-B53A-4B13-A233-0088F79DCBCB",
            "c6ef3124-b53a-4b13-a233-0088f79dcbcb",
            id="uuid-upper",
        ),
        pytest.param(
            "event_id", "1-2-3-4-5", "00000001-0002-0003-0004-000000000005", id="uuid-lenient"
        ),
        pytest.param("txn_id", "-2147483648", -2147483648, id="int-min"),
        pytest.param("txn_id", "+7", 7, id="int-plus"),
        pytest.param("se_value", "1.5d", 1.5, id="double-suffix"),
        pytest.param("se_value", " 2.5 ", 2.5, id="double-trimmed"),
        pytest.param("se_value", "0x1.8p1", 3.0, id="double-hex"),
        pytest.param("se_value", "1e2", 100.0, id="double-exponent"),
        pytest.param("br_cookies", "0", False, id="bool-false"),
    ],
)
def test_valid_value_decoding(field: str, text: str, expected: Any) -> None:
    """Values the SDK accepts decode to their BigQuery JSON form."""
    assert expected == _event(enriched_line(**{field: text})).atomic[field]


@pytest.mark.parametrize("text", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_non_finite_double_is_null(text: str) -> None:
    """A double the SDK reads as non-finite is a NULL column, as its JSON encoder writes it."""
    assert "se_value" not in _event(enriched_line(se_value=text)).atomic


def test_empty_fields_are_omitted() -> None:
    """Empty optional fields are absent from the atomic values."""
    assert "page_referrer" not in _event(enriched_line(page_referrer=None)).atomic


def test_entities_are_decoded() -> None:
    """Contexts, derived contexts and the unstruct event become SelfDescribingData."""
    line = enriched_line(
        contexts=[("iglu:com.acme/ctx/jsonschema/1-0-0", {"a": 1})],
        derived_contexts=[("iglu:com.acme/derived/jsonschema/2-1-0", {"b": [2]})],
        unstruct_event=("iglu:com.acme/click/jsonschema/1-0-1", {"c": None}),
    )
    expected = EnrichedEvent(
        _event(enriched_line()).atomic,
        (SelfDescribingData(SchemaKey.parse("iglu:com.acme/ctx/jsonschema/1-0-0"), {"a": 1}),),
        (
            SelfDescribingData(
                SchemaKey.parse("iglu:com.acme/derived/jsonschema/2-1-0"), {"b": [2]}
            ),
        ),
        SelfDescribingData(SchemaKey.parse("iglu:com.acme/click/jsonschema/1-0-1"), {"c": None}),
    )
    assert expected == _event(line)


_OTHER_ENVELOPE = "iglu:com.snowplowanalytics.snowplow/contexts/jsonschema/2-0-0"


@pytest.mark.parametrize(
    ("field", "text", "message"),
    [
        pytest.param("contexts", "{", "ParsingFailure: ", id="not-json"),
        pytest.param("contexts", "[]", "DecodingFailure at : JsonObject", id="not-object"),
        pytest.param(
            "contexts",
            '{"data": []}',
            "DecodingFailure at : schema key is not available",
            id="no-schema",
        ),
        pytest.param(
            "contexts",
            '{"schema": 1, "data": []}',
            "DecodingFailure at : String",
            id="schema-not-string",
        ),
        pytest.param(
            "contexts",
            '{"schema": "nope", "data": []}',
            "DecodingFailure at : INVALID_IGLUURI",
            id="bad-uri",
        ),
        pytest.param(
            "contexts",
            '{"schema": "iglu:a/b/jsonschema/1-0", "data": []}',
            "DecodingFailure at : INVALID_IGLUURI",
            id="short-version",
        ),
        pytest.param(
            "contexts",
            '{"schema": "iglu:a/b/jsonschema/01-0-0", "data": []}',
            "DecodingFailure at : INVALID_SCHEMAVER",
            id="bad-version",
        ),
        pytest.param(
            "contexts",
            contexts_field(envelope=_OTHER_ENVELOPE),
            f"Unknown payload: {_OTHER_ENVELOPE}",
            id="wrong-envelope",
        ),
        pytest.param(
            "contexts",
            '{"schema": "iglu:com.snowplowanalytics.snowplow/contexts/jsonschema/1-0-0"}',
            "DecodingFailure at : data key is not available",
            id="no-data",
        ),
        pytest.param(
            "contexts",
            '{"schema": "iglu:com.snowplowanalytics.snowplow/contexts/jsonschema/1-0-0", "data": {}}',
            "DecodingFailure at : C[A]",
            id="data-not-array",
        ),
        pytest.param(
            "derived_contexts",
            contexts_field(("iglu:a/b/jsonschema/1-0-0", {}), {"data": {}}),
            "DecodingFailure at [1]: schema key is not available",
            id="item-no-schema",
        ),
        pytest.param(
            "derived_contexts",
            '{"schema": "iglu:com.snowplowanalytics.snowplow/contexts/jsonschema/1-0-0", "data": [{"schema": "iglu:a/b/jsonschema/1-0-0", "data": {}}, "x"]}',
            "DecodingFailure at [1]: JsonObject",
            id="item-not-object",
        ),
        pytest.param(
            "derived_contexts",
            contexts_field({"schema": "iglu:a/b/c"}),
            "DecodingFailure at [0]: INVALID_IGLUURI",
            id="item-bad-uri",
        ),
        pytest.param(
            "derived_contexts",
            contexts_field({"schema": "iglu:a/b/jsonschema/1-0-0"}),
            "DecodingFailure at [0]: data key is not available",
            id="item-no-data",
        ),
        pytest.param(
            "unstruct_event",
            contexts_field(),
            "Unknown payload: iglu:com.snowplowanalytics.snowplow/contexts/jsonschema/1-0-0",
            id="unstruct-wrong-envelope",
        ),
        pytest.param(
            "unstruct_event",
            '{"schema": "iglu:com.snowplowanalytics.snowplow/unstruct_event/jsonschema/1-0-0", "data": null}',
            "DecodingFailure at : JsonObject",
            id="unstruct-null",
        ),
    ],
)
def test_entity_errors(field: str, text: str, message: str) -> None:
    """Malformed self-describing JSON is an InvalidValue with the SDK's circe-style message."""
    (error,) = _errors(**{field: text})
    assert (field, text, True) == (
        error["key"],
        error["value"],
        error["message"].startswith(message),
    )


def test_contexts_envelope_accepts_any_addition() -> None:
    """Envelope versions 1-0-* are accepted, as the SDK's criterion says."""
    line = enriched_line(
        contexts=contexts_field(envelope=_OTHER_ENVELOPE.replace("2-0-0", "1-0-7"))
    )
    expected: tuple[SelfDescribingData, ...] = ()
    assert expected == _event(line).contexts


def test_length_validation_is_optional() -> None:
    """Over-long strings pass by default and fail with the SDK's message when asked."""
    line = enriched_line(app_id="x" * 256)
    expected = [
        True,
        [
            {
                "type": "InvalidValue",
                "key": "app_id",
                "value": "x" * 256,
                "message": "Field app_id longer than maximum allowed size 255",
            }
        ],
    ]
    assert expected == [
        isinstance(parse(line), EnrichedEvent),
        _failure(line, validate_field_lengths=True)["errors"],
    ]


def test_length_validation_counts_utf16_units() -> None:
    """Characters outside the BMP count twice, as Java's String.length does."""
    line = enriched_line(geo_country="a\U0001f600")
    expected = "Field geo_country longer than maximum allowed size 2"
    assert expected == _failure(line, validate_field_lengths=True)["errors"][0]["message"]


def test_parse_bytes_decodes_utf8() -> None:
    """Valid UTF-8 bytes parse like the text they encode."""
    line = enriched_line(page_title="Café ☕")
    assert parse(line) == parse_bytes(line.encode())


def test_parse_bytes_rejects_invalid_utf8() -> None:
    """Invalid UTF-8 is a parsing bad row naming the offset, with the payload made valid."""
    data = enriched_line(page_title="Example").encode().replace(b"Example", b"Ex\xffample")
    result = parse_bytes(data)
    assert isinstance(result, ParsingErrorRow)
    offset = data.index(b"\xff")
    expected = {
        "type": "RowDecodingError",
        "errors": [
            {
                "type": "UnhandledRowDecodingError",
                "message": f"Invalid UTF-8 at byte {offset} (0xff): invalid start byte",
            }
        ],
    }
    assert (expected, FailureCode.PARSING_INVALID_UTF8, "Ex\ufffdample" in result.payload) == (
        result.failure,
        result.code,
        True,
    )


def test_fast_path_failure_keeps_entities_for_errors() -> None:
    """A line failing late still reports its entity fields' real text."""
    fields = enriched_fields(contexts="{", true_tstamp="bad")
    errors = _failure("\t".join(fields))["errors"]
    expected = ["contexts", "true_tstamp"]
    assert expected == [error["key"] for error in errors]
