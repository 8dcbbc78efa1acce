"""Deliveries sorts each delivery by message id: new, a copy of a held one, or of one written."""

from __future__ import annotations

from dataclasses import dataclass

from plowline_deadletter.deliveries import Deliveries, Seen


@dataclass(frozen=True)
class Message:
    """A delivery with only what ``Deliveries`` reads."""

    message_id: str
    n: int = 0


def test_copies_of_a_held_message_are_returned_when_it_is_settled() -> None:
    """Two copies of a buffered message come back with it, to be settled alike."""
    deliveries: Deliveries[Message] = Deliveries()
    first, copies = Message("a"), [Message("a", 1), Message("a", 2)]
    seen = [deliveries.admit(m) for m in (first, *copies)]
    assert (seen, deliveries.settle(first, written=True)) == (
        [Seen.NEW, Seen.HELD, Seen.HELD],
        copies,
    )


def test_a_message_whose_write_failed_is_new_on_its_next_delivery() -> None:
    """Nacked after a failed write: the redelivery is buffered again, not dropped."""
    deliveries: Deliveries[Message] = Deliveries()
    deliveries.admit(Message("a"))
    deliveries.settle(Message("a"), written=False)
    assert deliveries.admit(Message("a", 1)) is Seen.NEW


def test_only_the_last_written_ids_are_remembered() -> None:
    """With room for two ids, the oldest written one is forgotten: its copy is new again."""
    deliveries: Deliveries[Message] = Deliveries(remember=2)
    for name in "abc":
        deliveries.admit(Message(name))
        deliveries.settle(Message(name), written=True)
    seen = [deliveries.admit(Message(name, 1)) for name in "abc"]
    assert seen == [Seen.NEW, Seen.WRITTEN, Seen.WRITTEN]
