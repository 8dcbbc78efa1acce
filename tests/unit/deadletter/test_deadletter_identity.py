"""A bad row's identity: its bytes, less the moments its failure records."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from plowline_core.badrows import IgluErrorRow, Processor, SizeViolationRow
from plowline_core.iglu.key import SchemaKey
from plowline_core.iglu.resolver import LookupAttempt, SchemaNotFound
from plowline_deadletter.identity import identity
from plowline_deadletter.layout import encode_lines, object_lines

PROCESSOR = Processor("plowline-loader", "0.1.0")
KEY = SchemaKey.parse("iglu:com.acme/unknown/jsonschema/1-0-0")
ASKED = datetime(2026, 11, 24, 13, 0, tzinfo=UTC)
PAYLOAD = {"event_id": "c6ef3124-b53a-4b13-a233-0088f79dcbcb", "contexts": [{"timestamp": "t1"}]}
ROW = b'{"schema":"iglu:com.snowplowanalytics.snowplow.badrows/loader_parsing_error/jsonschema/2-0-0","data":{"n":1}}'


def _iglu_error(asked: datetime, attempts: int = 1, payload: object = PAYLOAD) -> bytes:
    """The loader_iglu_error of an event naming a schema no registry has, looked up at ``asked``."""
    missing = SchemaNotFound(KEY, (LookupAttempt("Iglu Central", attempts, asked),))
    return IgluErrorRow((missing.to_failure(),), payload).to_json(PROCESSOR)  # type: ignore[arg-type]


def _size_violation(stamp: str, payload: str = "line") -> bytes:
    return SizeViolationRow.for_payload(payload, 10_000, "too big", stamp, PROCESSOR).to_json(
        PROCESSOR
    )


@pytest.mark.parametrize(
    ("one", "other"),
    [
        pytest.param(ROW, ROW + b"\n", id="trailing-newline"),
        pytest.param(
            _iglu_error(ASKED), _iglu_error(ASKED + timedelta(minutes=7), 3), id="iglu-asked-again"
        ),
        pytest.param(
            _size_violation("2026-11-24T13:00:00.000Z"),
            _size_violation("2026-11-24T13:05:00.000Z"),
            id="size-violation-stamped-again",
        ),
        pytest.param(b"not json", b"not json\n", id="unparseable"),
    ],
)
def test_a_bad_row_made_again_for_one_line_has_one_identity(one: bytes, other: bytes) -> None:
    """The same line's bad row, made again later (or with a newline), is one bad row."""
    assert identity(one) == identity(other)


@pytest.mark.parametrize(
    ("one", "other"),
    [
        pytest.param(ROW, ROW.replace(b'"n":1', b'"n":2'), id="one-byte-apart"),
        pytest.param(b"not json", b"not json ", id="unparseable-trailing-space"),
        pytest.param(b"x\n\n", b"x\n", id="two-newlines"),
        pytest.param(
            _iglu_error(ASKED),
            _iglu_error(ASKED, payload={**PAYLOAD, "contexts": [{"timestamp": "t2"}]}),
            id="timestamp-in-the-payload-counts",
        ),
        pytest.param(
            _size_violation("2026-11-24T13:00:00.000Z", "line a"),
            _size_violation("2026-11-24T13:00:00.000Z", "line b"),
            id="another-line",
        ),
        pytest.param(b"{}", b"\x00raw\x00{}", id="raw-is-not-json"),
    ],
)
def test_bad_rows_of_different_lines_have_different_identities(one: bytes, other: bytes) -> None:
    """Bad rows that differ in anything but the moments their failure records are two."""
    assert identity(one) != identity(other)


@pytest.mark.parametrize("gzip", [pytest.param(False, id="ndjson"), pytest.param(True, id="gzip")])
def test_a_line_read_back_from_an_object_has_the_identity_of_its_message(gzip: bool) -> None:
    """A message and its line in the object written for it give one identity."""
    messages = [ROW + b"\n", _iglu_error(ASKED)]
    name = "p/2026/11/22/05/20261122T051300Z-id1.ndjson" + (".gz" if gzip else "")
    lines = object_lines(name, encode_lines(messages, gzip))
    assert [identity(line) for line in lines] == [identity(m) for m in messages]


def test_a_bad_row_nested_deeper_than_the_interpreter_recurses_has_an_identity() -> None:
    """A hostile failure nested 1,000 levels deep is identified (no RecursionError), by its bytes."""

    def nested(leaf: bytes) -> bytes:
        depth = 1_000
        failure = b"[" * depth + leaf + b"]" * depth
        return b'{"schema":"iglu:a/b/jsonschema/1-0-0","data":{"failure":' + failure + b"}}"

    assert identity(nested(b"1")) != identity(nested(b"2"))
    assert identity(nested(b"1")) == identity(nested(b"1") + b"\n")
