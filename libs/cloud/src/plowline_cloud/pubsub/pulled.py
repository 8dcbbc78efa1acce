"""A pulled Pub/Sub message as plain values, settled later by its ack id: ``PulledMessage``.

Notes:
    Plain values only, no Google or gRPC import: the loader's pipeline and its Spark tasks
    share it without pulling in a client (the loader's worker daemon preloads the clients
    itself, before it forks and before any channel exists: ``plowline_loader.spark.worker_daemon``).
    The loader's processing source hands the pulled messages themselves to its partition
    function (one object per message from the pull to the batch, for the CPU per event);
    exactly-once mode reads the ``pubsub`` source's rows, each made the same
    ``PulledMessage`` (``pulled_of_row``), so the tasks' code has one shape of message to
    handle. ``streaming.PubSubReceivedMessage`` is the other kind: settled through
    callbacks into the streaming client, never pickled.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple, Protocol


class AckHandle(Protocol):
    """What settling by ack id needs of a message: a ``PulledMessage``, or a row of the
    loader's ``pubsub`` source (a ``pyspark.sql.Row`` answers its columns as attributes)."""

    @property
    def ack_id(self) -> str:
        """The id that acks, nacks or extends this message."""
        ...

    @property
    def subscription(self) -> str:
        """The subscription it came from (``projects/P/subscriptions/S``)."""
        ...


class PulledMessage(NamedTuple):
    """One pulled message: the ack id, its subscription and the message, in plain picklable values.

    Notes:
        A named tuple: built for every pulled message, in a third of a frozen dataclass's
        time, and made once per message. It is the only object made per message between
        the pull and the loader's pipeline: the pipeline reads it as its inbound message
        (``plowline_loader.batch.message.Message``), the acking partition as an
        ``AckHandle``; the publish time stays an integer until a size violation or a
        latency needs it.
    """

    ack_id: str
    subscription: str
    message_id: str
    publish_time_us: int
    data: bytes
    attributes: tuple[tuple[str, str], ...] = ()

    @property
    def size(self) -> int:
        """Return the payload size counted against a partition's byte budget."""
        if not self.attributes:
            return len(self.data)
        return len(self.data) + sum(len(k) + len(v) for k, v in self.attributes)


class _Columns(Protocol):
    """A row read by column name (a ``pyspark.sql.Row``)."""

    def __getitem__(self, name: Any) -> Any: ...


def pulled_of_row(row: _Columns) -> PulledMessage:
    """Return a row with the pulled message's columns (the loader's ``pubsub`` source) as one.

    Notes:
        Spark hands ``TimestampType`` to Python as a naive local time: it is taken as
        such and made UTC microseconds (an aware time is converted from its zone).
    """
    attributes = row["attributes"]
    return PulledMessage(
        row["ack_id"],
        row["subscription"],
        row["message_id"],
        (row["publish_time"].astimezone(UTC) - _EPOCH) // _MICROSECOND,
        bytes(row["data"]),
        tuple(attributes.items()) if attributes else (),
    )


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
