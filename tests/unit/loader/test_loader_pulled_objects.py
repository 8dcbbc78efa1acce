"""From a pulled protobuf message to the pipeline's InboundMessage: exact values (its CPU is bench/loader_cpu.py's)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from google.pubsub_v1.types import PullResponse
from plowline_loader.partition import _inbound
from plowline_loader.pipeline import InboundMessage
from plowline_loader.source.processing import message_row
from plowline_loader.source.subscription import PulledMessage, _pulled

SUBSCRIPTION = "projects/p/subscriptions/s"


def _response(count: int, attributes: dict[str, str] | None = None) -> Any:
    response = PullResponse.pb()()
    for n in range(count):
        received = response.received_messages.add()
        received.ack_id = f"ack-{n}"
        received.message.data = b"line\t%d" % n
        received.message.message_id = str(1000 + n)
        received.message.publish_time.seconds = 1_700_000_000
        received.message.publish_time.nanos = 123_456_789
        received.message.attributes.update(attributes or {})
    return response


def test_a_pulled_message_carries_the_delivery() -> None:
    """Ack id, message id, publish time (µs), data and attributes come over unchanged."""
    [received] = _response(1, {"k": "v"}).received_messages
    pulled = _pulled(received)
    expected = PulledMessage("ack-0", "1000", 1_700_000_000_123_456, b"line\t0", (("k", "v"),))
    assert (pulled, pulled.size) == (expected, len(b"line\t0") + 2)


def test_a_message_without_attributes_has_none() -> None:
    """No attributes: an empty tuple, and the size is the data's."""
    [received] = _response(1).received_messages
    pulled = _pulled(received)
    assert (pulled.attributes, pulled.size) == ((), len(b"line\t0"))


def test_the_inbound_message_keeps_the_publish_time_in_utc() -> None:
    """The processing source's UTC time is kept; Spark's naive local time is made UTC."""
    [received] = _response(1).received_messages
    inbound = _inbound(message_row(_pulled(received), SUBSCRIPTION))
    naive = datetime(2026, 1, 2, 3, 4, 5)
    local = {"ack_id": "a", "message_id": "m", "data": b"x", "publish_time": naive}
    published = datetime(2023, 11, 14, 22, 13, 20, 123_456, tzinfo=UTC)
    assert (inbound, _inbound(local).publish_time) == (
        InboundMessage(b"line\t0", "1000", published),
        naive.astimezone(UTC),
    )


def test_an_inbound_time_in_another_zone_becomes_utc() -> None:
    """An aware time in another zone is converted, not passed through."""
    moment = datetime(2026, 1, 2, 3, 0, tzinfo=timezone(timedelta(hours=2)))
    row = {"ack_id": "a", "message_id": "m", "data": b"x", "publish_time": moment}
    published = _inbound(row).publish_time
    assert (published, published.tzinfo if published else None) == (moment, UTC)
