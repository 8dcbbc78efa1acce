"""Where bad rows are filed in the bucket and how objects are encoded."""

from __future__ import annotations

import gzip
from datetime import UTC, datetime

import pytest
from plowline_deadletter.layout import (
    encode_lines,
    hour_folders,
    object_lines,
    object_name,
    partition_of,
    stamp_of,
    unparseable_name,
)

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


@pytest.mark.parametrize(
    ("since", "until", "expected"),
    [
        pytest.param(
            datetime(2026, 11, 22, 5, 48, tzinfo=UTC),
            datetime(2026, 11, 22, 5, 59, 59, tzinfo=UTC),
            ["2026/11/22/05/"],
            id="within-an-hour",
        ),
        pytest.param(
            datetime(2026, 11, 22, 5, 59, tzinfo=UTC),
            datetime(2026, 11, 22, 6, 0, tzinfo=UTC),
            ["2026/11/22/05/", "2026/11/22/06/"],
            id="across-the-hour",
        ),
        pytest.param(
            datetime(2026, 12, 31, 22, 30, tzinfo=UTC),
            datetime(2027, 1, 1, 0, 10, tzinfo=UTC),
            ["2026/12/31/22/", "2026/12/31/23/", "2027/01/01/00/"],
            id="across-the-year",
        ),
    ],
)
def test_hour_folders_cover_the_lookback(
    since: datetime, until: datetime, expected: list[str]
) -> None:
    """The hour folders of a lookback are those of every hour it touches, and no other."""
    assert expected == hour_folders(since, until)


def test_the_stamp_of_a_name_is_the_time_it_was_named_after() -> None:
    """object_name's and unparseable_name's stamps read back; a foreign name has none."""
    start = datetime(2026, 11, 22, 5, 13, tzinfo=UTC)
    names = [
        object_name("p/jsonschema-1", start, "abc", True),
        unparseable_name(start, "4711"),
        "p/jsonschema-1/2026/11/22/05/someone-elses.ndjson",
    ]
    assert [stamp_of(name) for name in names] == [start, start, None]


@pytest.mark.parametrize(
    ("name", "body", "expected"),
    [
        pytest.param("a.ndjson", b"x\ny\n", [b"x", b"y"], id="ndjson"),
        pytest.param("a.ndjson.gz", gzip.compress(b"x\n"), [b"x"], id="gzip"),
        pytest.param("a.ndjson", b"", [], id="empty"),
        pytest.param("a.bin", b"x\ny\r\n", [b"x\ny\r\n"], id="unparseable-whole"),
    ],
)
def test_object_lines_are_the_bad_rows_an_object_holds(
    name: str, body: bytes, expected: list[bytes]
) -> None:
    """NDJSON splits on newlines (gunzipped first); an unparseable object is one message."""
    assert expected == object_lines(name, body)
