"""From a pulled protobuf message, or a ``pubsub`` source's row, to the delivery a task reads:
exact values (its CPU is bench/loader_cpu.py's)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from google.pubsub_v1.types import PullResponse
from plowline_cloud.pubsub.pulled import PulledMessage, pulled_of_row
from plowline_cloud.pubsub.subscription import _pulled_all
from pyspark.sql import Row

SUBSCRIPTION = "projects/p/subscriptions/s"
PUBLISHED_US = 1_700_000_000_123_456


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


def _row(publish_time: datetime, attributes: dict[str, str] | None = None) -> Row:
    return Row(
        ack_id="ack-0",
        subscription=SUBSCRIPTION,
        message_id="1000",
        publish_time=publish_time,
        data=bytearray(b"line\t0"),
        attributes=attributes or {},
    )


def test_a_pulled_message_carries_the_delivery() -> None:
    """Ack id, subscription, message id, publish time (µs), data and attributes come over."""
    [pulled] = _pulled_all(_response(1, {"k": "v"}).received_messages, SUBSCRIPTION)
    expected = PulledMessage("ack-0", SUBSCRIPTION, "1000", PUBLISHED_US, b"line\t0", (("k", "v"),))
    assert (expected, PulledMessage, len(b"line\t0") + 2) == (pulled, type(pulled), pulled.size)


def test_a_message_without_attributes_has_none() -> None:
    """No attributes: an empty tuple, and the size is the data's."""
    [pulled] = _pulled_all(_response(1).received_messages, SUBSCRIPTION)
    assert (pulled.attributes, pulled.size) == ((), len(b"line\t0"))


def test_pulled_messages_keep_the_order_received() -> None:
    """Each delivery of a response becomes one message, in the response's order."""
    pulled = _pulled_all(_response(3).received_messages, SUBSCRIPTION)
    expected = [("ack-0", "1000"), ("ack-1", "1001"), ("ack-2", "1002")]
    assert expected == [(one.ack_id, one.message_id) for one in pulled]


def test_a_source_row_is_the_delivery_it_was_pulled_as() -> None:
    """Spark's naive local publish time is taken as local and made UTC µs; data made bytes."""
    moment = datetime.fromtimestamp(PUBLISHED_US / 1e6)  # naive, local: as Spark hands it
    pulled = pulled_of_row(_row(moment, {"k": "v"}))
    expected = PulledMessage("ack-0", SUBSCRIPTION, "1000", PUBLISHED_US, b"line\t0", (("k", "v"),))
    assert (expected, bytes) == (pulled, type(pulled.data))


def test_a_source_row_time_in_another_zone_is_converted() -> None:
    """An aware time in another zone becomes the same instant in UTC µs, not its wall time."""
    moment = datetime(2026, 1, 2, 3, 0, tzinfo=timezone(timedelta(hours=2)))
    utc = datetime(2026, 1, 2, 1, 0, tzinfo=UTC)
    expected = int(utc.timestamp()) * 1_000_000
    assert expected == pulled_of_row(_row(moment)).publish_time_us
