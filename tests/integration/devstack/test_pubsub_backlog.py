"""The emulator's per-subscription backlog under a fake clock: leases, expiry, flow control."""

from __future__ import annotations

from typing import Any

from google.pubsub_v1 import types
from plowline_devstack.pubsub.backlog import Backlog, Entry, Holder

MessagePb: Any = types.PubsubMessage.pb()


class _Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _backlog(clock: _Clock, *ids: str, max_attempts: int = 0) -> Backlog:
    backlog = Backlog("projects/p/subscriptions/sub", max_attempts=max_attempts, clock=clock)
    backlog.enqueue(Entry(MessagePb(message_id=i, data=b"x" * 100), 100) for i in ids)
    return backlog


def _ids(backlog: Backlog, deadline: float = 10, holder: Holder | None = None) -> list[str]:
    return [d.entry.message.message_id for d in backlog.pull(100, deadline, 0, holder)]


def test_lease_hides_message_until_deadline() -> None:
    """A leased message is not handed out again before its deadline."""
    clock = _Clock()
    backlog = _backlog(clock, "1")
    _ids(backlog)
    clock.now += 9.9
    expected: list[str] = []
    assert expected == _ids(backlog)


def test_expired_lease_is_redelivered() -> None:
    """A lease past its deadline makes the message deliverable again."""
    clock = _Clock()
    backlog = _backlog(clock, "1")
    _ids(backlog)
    clock.now += 10
    expected = ["1"]
    assert expected == _ids(backlog)


def test_modify_extends_a_lease() -> None:
    """Moving a deadline to 600 s keeps the message leased past the original deadline."""
    clock = _Clock()
    backlog = _backlog(clock, "1")
    [delivery] = backlog.pull(1, 10, 0)
    backlog.modify([delivery.ack_id], 600)
    clock.now += 599
    expected: list[str] = []
    assert expected == _ids(backlog)


def test_ack_of_an_expired_lease_is_ignored() -> None:
    """An ack id whose lease expired no longer acks the message."""
    clock = _Clock()
    backlog = _backlog(clock, "1")
    [delivery] = backlog.pull(1, 10, 0)
    clock.now += 11
    backlog.pull(0, 10, 0)  # lets the backlog notice the expiry
    expected: list[Entry] = []
    assert expected == backlog.acknowledge([delivery.ack_id])


def test_redeliveries_come_before_new_messages() -> None:
    """A nacked message is handed out ahead of messages never delivered."""
    clock = _Clock()
    backlog = _backlog(clock, "1", "2")
    first = backlog.pull(1, 10, 0)
    backlog.modify([first[0].ack_id], 0)
    expected = ["1", "2"]
    assert expected == _ids(backlog)


def test_holder_limits_outstanding_messages_until_ack() -> None:
    """A holder at its message limit gets nothing more until it acks."""
    clock = _Clock()
    backlog = _backlog(clock, "1", "2", "3")
    holder = Holder(max_messages=2)
    first = backlog.pull(100, 10, 0, holder)
    blocked = _ids(backlog, holder=holder)
    backlog.acknowledge([first[0].ack_id])
    expected = (["1", "2"], [], ["3"])
    assert expected == (
        [d.entry.message.message_id for d in first],
        blocked,
        _ids(backlog, holder=holder),
    )


def test_attempts_beyond_the_limit_go_to_the_dead_list() -> None:
    """With max_attempts, a message nacked that often is set aside instead of delivered."""
    clock = _Clock()
    backlog = _backlog(clock, "1", max_attempts=2)
    for _ in range(2):
        [delivery] = backlog.pull(1, 10, 0)
        backlog.modify([delivery.ack_id], 0)
    delivered = _ids(backlog)
    expected: tuple[list[str], list[str]] = ([], ["1"])
    assert expected == (delivered, [e.message.message_id for e in backlog.take_dead()])
