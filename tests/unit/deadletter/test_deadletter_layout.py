"""Where bad rows are filed in the bucket and how objects are encoded."""

from __future__ import annotations

import gzip
from datetime import UTC, datetime

import pytest
from plowline_deadletter.layout import encode_lines, object_name, partition_of, unparseable_name

_PARSING = (
    b'{"schema":"iglu:com.snowplowanalytics.snowplow.badrows/loader_parsing_error/jsonschema/2-0-0",'
    b'"data":{"payload":"x"}}'
)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param(
            _PARSING,
            "com.snowplowanalytics.snowplow.badrows.loader_parsing_error/jsonschema-2",
            id="bad-row",
        ),
        pytest.param(b"not json", "unparseable", id="not-json"),
        pytest.param(b'{"schema":"nope","data":{}}', "unparseable", id="bad-uri"),
        pytest.param(b"[1,2]", "unparseable", id="not-an-object"),
        pytest.param(
            _PARSING + b"\n",
            "com.snowplowanalytics.snowplow.badrows.loader_parsing_error/jsonschema-2",
            id="one-trailing-newline",
        ),
        pytest.param(_PARSING.replace(b",", b",\n", 1), "unparseable", id="json-over-lines"),
        pytest.param(_PARSING.replace(b",", b",\r", 1), "unparseable", id="carriage-return"),
        pytest.param(_PARSING + b"\n\n", "unparseable", id="two-trailing-newlines"),
    ],
)
def test_partition_of_a_message(data: bytes, expected: str) -> None:
    """A message is filed by vendor, name and model of its schema, else as unparseable."""
    assert expected == partition_of(data)


@pytest.mark.parametrize(
    ("gzip_it", "expected"),
    [
        pytest.param(False, "p/jsonschema-1/2026/11/22/05/20261122T051300Z-abc.ndjson", id="plain"),
        pytest.param(
            True, "p/jsonschema-1/2026/11/22/05/20261122T051300Z-abc.ndjson.gz", id="gzip"
        ),
    ],
)
def test_object_name(gzip_it: bool, expected: str) -> None:
    """Objects are partitioned by hour of their window start and named by it."""
    start = datetime(2026, 11, 22, 5, 13, tzinfo=UTC)
    assert expected == object_name("p/jsonschema-1", start, "abc", gzip_it)


def test_unparseable_object_name() -> None:
    """An unparseable message's object is named by its window and holds raw bytes (.bin)."""
    start = datetime(2026, 11, 22, 5, 13, tzinfo=UTC)
    expected = "unparseable/2026/11/22/05/20261122T051300Z-abc.bin"
    assert expected == unparseable_name(start, "abc")


def test_lines_are_newline_terminated() -> None:
    """NDJSON: each message on its own line, a trailing newline kept once."""
    expected = b"a\nb\n"
    assert expected == encode_lines([b"a", b"b\n"], gzip=False)


def test_gzip_round_trips() -> None:
    """A gzipped object decompresses to the plain NDJSON."""
    expected = b"a\nb\n"
    assert expected == gzip.decompress(encode_lines([b"a", b"b"], gzip=True))
