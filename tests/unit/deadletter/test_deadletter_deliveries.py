"""Deliveries sorts each delivery by its bad row's digest: new, a copy of a held one, or of one written."""

from __future__ import annotations

import pytest
from plowline_deadletter.deliveries import Deliveries, Seen, digest
from plowline_deadletter.layout import encode_lines, object_lines

ROW = b'{"schema":"iglu:com.snowplowanalytics.snowplow.badrows/loader_parsing_error/jsonschema/2-0-0","data":{"n":1}}'


@pytest.mark.parametrize(
    ("one", "other", "same"),
    [
        pytest.param(ROW, ROW + b"\n", True, id="trailing-newline-dropped"),
        pytest.param(ROW, ROW.replace(b'"n":1', b'"n":2'), False, id="one-byte-apart"),
        pytest.param(ROW, ROW + b" ", False, id="trailing-space-kept"),
        pytest.param(b"x\n\n", b"x\n", False, id="only-one-newline-dropped"),
    ],
)
def test_digest_is_the_identity_of_the_bytes(one: bytes, other: bytes, same: bool) -> None:
    """Two bad rows have one digest exactly when their bytes match, but for one trailing newline."""
    assert (digest(one) == digest(other), len(digest(one))) == (same, 16)


@pytest.mark.parametrize("gzip", [pytest.param(False, id="ndjson"), pytest.param(True, id="gzip")])
def test_a_line_read_back_from_an_object_has_the_digest_of_its_message(gzip: bool) -> None:
    """A message and its line in the object written for it give one digest."""
    messages = [ROW + b"\n", ROW.replace(b"1}", b"2}")]
    name = "p/2026/11/22/05/20261122T051300Z-id1.ndjson" + (".gz" if gzip else "")
    lines = object_lines(name, encode_lines(messages, gzip))
    assert [digest(line) for line in lines] == [digest(m) for m in messages]


def test_copies_of_a_held_bad_row_are_returned_when_it_is_settled() -> None:
    """Two copies of a buffered bad row come back with it, to be settled alike."""
    deliveries: Deliveries[str] = Deliveries()
    seen = [deliveries.admit(b"a", message) for message in ("first", "copy 1", "copy 2")]
    assert (seen, deliveries.settle(b"a", written=True)) == (
        [Seen.NEW, Seen.HELD, Seen.HELD],
        ["copy 1", "copy 2"],
    )


def test_a_bad_row_whose_write_failed_is_new_on_its_next_delivery() -> None:
    """Nacked after a failed write: the redelivery is buffered again, not dropped."""
    deliveries: Deliveries[str] = Deliveries()
    deliveries.admit(b"a", "first")
    deliveries.settle(b"a", written=False)
    assert deliveries.admit(b"a", "again") is Seen.NEW


def test_only_the_last_written_digests_are_remembered() -> None:
    """With room for two digests, the oldest written one is forgotten: its copy is new again."""
    deliveries: Deliveries[str] = Deliveries(remember=2)
    for key in (b"a", b"b", b"c"):
        deliveries.admit(key, "first")
        deliveries.settle(key, written=True)
    seen = [deliveries.admit(key, "copy") for key in (b"a", b"b", b"c")]
    assert seen == [Seen.NEW, Seen.WRITTEN, Seen.WRITTEN]


def test_remembered_digests_make_their_copies_written() -> None:
    """Digests remembered from before a start (oldest first, bounded) are WRITTEN; others NEW."""
    deliveries: Deliveries[str] = Deliveries(remember=2)
    deliveries.remember([b"old", b"a", b"b"])
    seen = [deliveries.admit(key, "copy") for key in (b"old", b"a", b"b")]
    assert (seen, deliveries.remembered) == ([Seen.NEW, Seen.WRITTEN, Seen.WRITTEN], 2)
