"""The exactly-once shuffle key is the ledger's key: every spelling of one event id meets."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st
from plowline_core.event.values import decode_uuid
from plowline_core.testing.tsv import enriched_line
from plowline_loader.batch.event_key import event_id_key

EVENT_ID = "2d6e6b1c-7a3f-4c4e-9d1a-0f6f3f0c9b11"


@pytest.mark.parametrize(
    "spelling",
    [
        pytest.param(EVENT_ID, id="lower"),
        pytest.param(EVENT_ID.upper(), id="upper"),
        pytest.param("2D6E6B1C-7a3f-4C4E-9d1a-0F6F3F0C9B11", id="mixed"),
    ],
)
def test_every_spelling_of_an_id_has_the_canonical_key(spelling: str) -> None:
    """A line's key is its event id in canonical (lower-case) form, however it is spelled."""
    expected = EVENT_ID
    assert expected == event_id_key(enriched_line(event_id=spelling).encode())


@given(st.uuids(), st.lists(st.booleans(), min_size=36, max_size=36))
def test_the_key_of_any_spelling_is_what_the_ledger_keys_on(
    event_id: uuid.UUID, upper: list[bool]
) -> None:
    """For any UUID in any mix of cases, the key equals ``decode_uuid`` (the ledger's id)."""
    spelling = "".join(c.upper() if u else c for c, u in zip(str(event_id), upper, strict=True))
    expected = decode_uuid(spelling)
    assert expected == event_id_key(enriched_line(event_id=spelling).encode())


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param(b"Short\tLine", "short\tline", id="too-few-fields"),
        pytest.param(b"", "", id="empty"),
        pytest.param(b"\xff\xfe", "\ufffd\ufffd", id="not-utf8"),
    ],
)
def test_a_line_without_an_event_id_field_is_keyed_by_its_text(body: bytes, expected: str) -> None:
    """A line with fewer fields than the event id's position is keyed by its whole text."""
    assert expected == event_id_key(body)
