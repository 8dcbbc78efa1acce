"""Deliveries sorts each delivery by its bad row's identity: new, a copy of a held one, or of one written."""

from __future__ import annotations

from plowline_deadletter.deliveries import Deliveries, Seen


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


def test_only_the_last_written_identities_are_remembered() -> None:
    """With room for two identities, the oldest written one is forgotten: its copy is new again."""
    deliveries: Deliveries[str] = Deliveries(remember=2)
    for key in (b"a", b"b", b"c"):
        deliveries.admit(key, "first")
        deliveries.settle(key, written=True)
    seen = [deliveries.admit(key, "copy") for key in (b"a", b"b", b"c")]
    assert seen == [Seen.NEW, Seen.WRITTEN, Seen.WRITTEN]


def test_remembered_identities_make_their_copies_written() -> None:
    """Identities remembered from before a start (oldest first, bounded) are WRITTEN; others NEW."""
    deliveries: Deliveries[str] = Deliveries(remember=2)
    deliveries.remember([b"old", b"a", b"b"])
    seen = [deliveries.admit(key, "copy") for key in (b"old", b"a", b"b")]
    assert (seen, deliveries.remembered) == ([Seen.NEW, Seen.WRITTEN, Seen.WRITTEN], 2)
