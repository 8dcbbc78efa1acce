"""Specification of the failedInserts payload (loader to repeater)."""

from __future__ import annotations

from datetime import UTC, datetime

import orjson
import pytest
from plowline_core.messages import (
    FailedInsert,
    MessageError,
    decode_failed_insert,
    encode_failed_insert,
)

ROW = {
    "event_id": "c6ef3124-b53a-4b13-a233-0088f79dcbcb",
    "etl_tstamp": "2024-05-01T12:00:00.123Z",
    "collector_tstamp": "2024-05-01T11:59:59Z",
    "contexts_com_acme_checkout_started_1_0_0": [{"cart_id": "x"}],
    "load_tstamp": "AUTO",
}


def test_encodes_the_row_as_sent() -> None:
    """The payload is the row itself as compact JSON."""
    expected = ROW
    assert expected == orjson.loads(encode_failed_insert(ROW))


def test_decodes_event_id_timestamp_and_row() -> None:
    """event_id and etl_tstamp are lifted out; the row is kept whole."""
    expected = FailedInsert(
        "c6ef3124-b53a-4b13-a233-0088f79dcbcb",
        datetime(2024, 5, 1, 12, 0, 0, 123000, tzinfo=UTC),
        ROW,
    )
    assert expected == decode_failed_insert(encode_failed_insert(ROW))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("2024-05-01T12:00:00Z", datetime(2024, 5, 1, 12, tzinfo=UTC), id="zulu"),
        pytest.param(
            "2024-05-01 12:00:00", datetime(2024, 5, 1, 12, tzinfo=UTC), id="tsv-naive-is-utc"
        ),
        pytest.param(
            "2024-05-01T14:00:00+02:00", datetime(2024, 5, 1, 12, tzinfo=UTC), id="offset"
        ),
    ],
)
def test_etl_tstamp_is_utc(text: str, expected: datetime) -> None:
    """etl_tstamp is read as an aware UTC datetime."""
    result = decode_failed_insert(orjson.dumps({"event_id": "e", "etl_tstamp": text}))
    assert isinstance(result, FailedInsert)
    assert expected == result.etl_tstamp


@pytest.mark.parametrize(
    "payload",
    [
        pytest.param(b'{"event_id": "e"}', id="no-etl-tstamp"),
        pytest.param(b'{"event_id": "e", "etl_tstamp": null}', id="null-etl-tstamp"),
    ],
)
def test_a_row_without_etl_tstamp_is_a_failed_insert(payload: bytes) -> None:
    """An event loaded with a NULL etl_tstamp comes back to the repeater (its backoff needs none)."""
    expected = FailedInsert("e", None, orjson.loads(payload))
    assert expected == decode_failed_insert(payload)


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        pytest.param(b"nope", "not JSON", id="not-json"),
        pytest.param(b"[]", "failed insert: expected a JSON object, got list", id="array"),
        pytest.param(
            b'{"etl_tstamp": "2024-05-01T12:00:00Z"}',
            "failed insert: event_id must be",
            id="no-event-id",
        ),
        pytest.param(
            b'{"event_id": "e", "etl_tstamp": "yesterday"}',
            "failed insert e: etl_tstamp must be",
            id="bad-etl-tstamp",
        ),
    ],
)
def test_unreadable_payloads_are_message_errors(payload: bytes, expected: str) -> None:
    """A payload the repeater cannot use is a MessageError value."""
    result = decode_failed_insert(payload)
    assert isinstance(result, MessageError)
    assert result.message.startswith(expected), result.message
