"""Every kind of bad row validates against its Snowplow JSON Schema."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from jsonschema import Draft4Validator, FormatChecker
from plowline_core.badrows import (
    BadRow,
    FailureCode,
    IgluErrorRow,
    ParsingErrorRow,
    Processor,
    RecoveryErrorRow,
    RuntimeErrorRow,
    SizeViolationRow,
    parse_bad_row,
)
from plowline_core.event.json import event_payload
from plowline_core.event.model import EnrichedEvent
from plowline_core.event.parser import parse, parse_bytes
from plowline_core.iglu.key import SchemaKey
from plowline_core.testing.tsv import enriched_line

_PROCESSOR = Processor("plowline-loader", "0.1.0-rc.1")


def _schema_file(conformance_dir: Path, iglu_central_dir: Path, key: SchemaKey) -> Path:
    vendored = conformance_dir / "vectors" / "badrows" / key.to_path()
    return vendored if vendored.exists() else iglu_central_dir / "schemas" / key.to_path()


def _errors(conformance_dir: Path, iglu_central_dir: Path, row: BadRow) -> list[str]:
    document = orjson.loads(row.to_json(_PROCESSOR))
    schema_file = _schema_file(
        conformance_dir, iglu_central_dir, SchemaKey.parse(document["schema"])
    )
    validator = Draft4Validator(json.loads(schema_file.read_text()), format_checker=FormatChecker())
    return [error.message for error in validator.iter_errors(document["data"])]


def _payload(**overrides: Any) -> dict[str, Any]:
    event = parse(enriched_line(**overrides))
    assert isinstance(event, EnrichedEvent)
    return event_payload(event)


def _parsing(line: str) -> ParsingErrorRow:
    result = parse(line)
    assert isinstance(result, ParsingErrorRow)
    return result


_RICH = {
    "contexts": [("iglu:com.acme/ctx/jsonschema/1-0-0", {"a": 1})],
    "unstruct_event": ("iglu:com.acme/click/jsonschema/1-0-1", {"x": [1, None]}),
    "derived_contexts": [("iglu:com.acme/ua/jsonschema/2-0-0", {"b": "c"})],
}
_RESOLUTION = {
    "error": "ResolutionError",
    "lookupHistory": [
        {
            "repository": "Iglu Central",
            "errors": [{"error": "NotFound"}],
            "attempts": 1,
            "lastAttempt": "2024-05-01T10:00:00.000Z",
        }
    ],
}
_KEY = "iglu:com.acme/ctx/jsonschema/1-0-0"

_ROWS: list[Any] = [
    pytest.param(lambda: _parsing("no tabs"), FailureCode.PARSING_NOT_TSV, id="not-tsv"),
    pytest.param(
        lambda: _parsing("a\tb"), FailureCode.PARSING_FIELD_NUMBER_MISMATCH, id="field-count"
    ),
    pytest.param(
        lambda: _parsing(enriched_line(txn_id="x", event_id="y", contexts="{")),
        FailureCode.PARSING_ROW_DECODING,
        id="row-decoding",
    ),
    pytest.param(
        lambda: parse_bytes(b"a\t\xff"), FailureCode.PARSING_INVALID_UTF8, id="invalid-utf8"
    ),
    pytest.param(
        lambda: IgluErrorRow(({"schemaKey": _KEY, "error": _RESOLUTION},), _payload(**_RICH)),
        FailureCode.IGLU_RESOLUTION,
        id="iglu-resolution",
    ),
    pytest.param(
        lambda: IgluErrorRow(({"schemaKey": _KEY, "message": "not a JSON Schema"},), _payload()),
        FailureCode.IGLU_RESOLUTION,
        id="iglu-invalid-schema",
    ),
    pytest.param(
        lambda: IgluErrorRow(
            ({"schemaCriterion": "iglu:com.acme/ctx/jsonschema/1-*-*", "error": _RESOLUTION},),
            _payload(),
        ),
        FailureCode.IGLU_RESOLUTION,
        id="iglu-schema-list",
    ),
    pytest.param(
        lambda: IgluErrorRow(
            (
                {"schemaKey": _KEY, "value": "x", "expected": "INTEGER"},
                {"schemaKey": _KEY, "value": {"a": 1}, "expected": "REPEATED"},
                {"schemaKey": _KEY, "key": "id", "value": None},
            ),
            _payload(**_RICH),
        ),
        FailureCode.IGLU_CAST,
        id="iglu-cast",
    ),
    pytest.param(
        lambda: RuntimeErrorRow("java.lang.NullPointerException at …", _payload(**_RICH)),
        FailureCode.RUNTIME,
        id="runtime",
    ),
    pytest.param(
        lambda: RecoveryErrorRow(
            {"message": "DecodingFailure at .event_id: Missing", "location": ["event_id"]},
            '{"a":1}',
        ),
        FailureCode.RECOVERY_PARSING,
        id="recovery-parsing",
    ),
    pytest.param(
        lambda: RecoveryErrorRow(
            {
                "message": "no such field: contexts_com_acme_ctx_1_0_0",
                "location": "contexts",
                "reason": "invalid",
            },
            '{"event_id":"c6ef3124-b53a-4b13-a233-0088f79dcbcb"}',
        ),
        FailureCode.RECOVERY_RUNTIME,
        id="recovery-runtime",
    ),
    pytest.param(
        lambda: SizeViolationRow.for_payload(
            b"x" * 20_000, 10_000, "message under 10000 bytes", "2024-05-01T10:00:00Z"
        ),
        FailureCode.SIZE_ROW,
        id="size-violation",
    ),
]


@pytest.mark.parametrize(("build", "code"), _ROWS)
def test_bad_row_validates(
    conformance_dir: Path, iglu_central_dir: Path, build: Any, code: FailureCode
) -> None:
    """The bad row validates against its schema (vendored, else Iglu Central)."""
    expected: list[str] = []
    assert expected == _errors(conformance_dir, iglu_central_dir, build())


@pytest.mark.parametrize(("build", "code"), _ROWS)
def test_bad_row_code(build: Any, code: FailureCode) -> None:
    """Each bad row reports its catalogue code."""
    assert code == build().code


@pytest.mark.parametrize(("build", "code"), _ROWS)
def test_bad_row_reads_back(build: Any, code: FailureCode) -> None:
    """parse_bad_row returns the schema key and data of an encoded bad row."""
    row = build()
    assert (row.schema, row.to_dict(_PROCESSOR)["data"]) == parse_bad_row(row.to_json(_PROCESSOR))


def test_bad_row_json_is_compact_and_ordered() -> None:
    """The encoding is compact self-describing JSON: schema, then processor, failure, payload."""
    expected = (
        b'{"schema":"iglu:com.snowplowanalytics.snowplow.badrows/loader_parsing_error/jsonschema/2-0-0",'
        b'"data":{"processor":{"artifact":"plowline-loader","version":"0.1.0-rc.1"},'
        b'"failure":{"type":"NotTSV"},"payload":"x"}}'
    )
    assert expected == ParsingErrorRow({"type": "NotTSV"}, "x").to_json(_PROCESSOR)


def test_bad_row_json_replaces_lone_surrogates() -> None:
    """Text that is not valid Unicode is written with U+FFFD instead of failing."""
    row = RuntimeErrorRow("bad \ud800 text", {})
    expected = "bad \ufffd text"
    assert expected == orjson.loads(row.to_json(_PROCESSOR))["data"]["failure"]


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b"not json", id="not-json"),
        pytest.param(b"[1]", id="not-object"),
        pytest.param(b'{"schema": "nope", "data": {}}', id="bad-uri"),
        pytest.param(b'{"schema": "iglu:a/b/jsonschema/1-0-0", "data": 1}', id="data-not-object"),
        pytest.param(b'{"data": {}}', id="no-schema"),
    ],
)
def test_parse_bad_row_rejects(data: bytes) -> None:
    """Messages that are not self-describing JSON objects read back as None."""
    assert parse_bad_row(data) is None
