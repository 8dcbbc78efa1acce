"""The ledger's entries read by the loader (hand-overs placed) and the repeater (ignored)."""

from __future__ import annotations

from plowline_cloud.write_api_pending import HANDED_OVER, placed_by_ledger

ENTRIES = [
    ("streams/a", "e1", None),  # a rows entry from a ledger older than ``kind``
    ("streams/a", "e2", None),
    ("streams/b", "e3", "rows"),
    ("", "e4", HANDED_OVER),
]


def test_the_loader_takes_handed_over_ids_as_placed() -> None:
    """For the loader a handed-over id is placed, and no stream is recovered for it."""
    streams, placed = placed_by_ledger(ENTRIES, honour_hand_overs=True)

    assert (streams, placed) == ({"streams/a": {"e1", "e2"}, "streams/b": {"e3"}}, {"e4"})


def test_the_repeater_ignores_hand_overs_but_not_rows_entries() -> None:
    """For the repeater a handed-over id is still to write; rows entries still count."""
    streams, placed = placed_by_ledger(ENTRIES, honour_hand_overs=False)

    assert (streams, placed) == ({"streams/a": {"e1", "e2"}, "streams/b": {"e3"}}, set())
