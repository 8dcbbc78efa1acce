"""What the batch reads of a message, and the times a message and its row carry.

``Message`` is a protocol: a pulled Pub/Sub message (``plowline_cloud.pubsub.pulled.PulledMessage``)
and a line read from a file (``InboundMessage``) are both one. ``violation_time`` is the moment a
size violation is stamped with; the latencies are the ``BatchOutcome``'s.

Notes:
    Pure: no Spark, no Google.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple, Protocol

from plowline_core.event.latency import collector_latencies_s


class Message(Protocol):
    """What the pipeline reads of a message: an ``InboundMessage``, or a pulled Pub/Sub message.

    Notes:
        Pulled messages are read as they are (``plowline_cloud.pubsub.pulled.PulledMessage``): no
        second object per message, since a partition holds thousands of them. The publish time is microseconds since the
        epoch, made a ``datetime`` only where one is needed (a size violation's stamp).
    """

    @property
    def data(self) -> bytes:
        """The enriched TSV line."""
        ...

    @property
    def message_id(self) -> str:
        """The message's id (a file's line: ``path:number``)."""
        ...

    @property
    def publish_time_us(self) -> int | None:
        """When Pub/Sub accepted it, in µs since the epoch (None for a line from a file)."""
        ...


class InboundMessage(NamedTuple):
    """One enriched TSV line as it arrived (``publish_time_us`` is None for files)."""

    data: bytes
    message_id: str
    publish_time_us: int | None = None


def violation_time(message: Message, now: datetime) -> datetime:
    """Return the time a size violation of ``message`` carries: its publish time, else ``now``.

    Notes:
        The publish time is the same on every delivery, so the bad row's bytes are too
        (``sizes``); only a line read from a file, which has none, is stamped ``now``.
    """
    published = message.publish_time_us
    return now if published is None else _EPOCH + timedelta(microseconds=published)


def collector_latencies(
    rows: Iterable[Mapping[str, Any]], inserted_at: datetime
) -> tuple[float, ...]:
    """Return, per row (its data), the seconds from its ``collector_tstamp`` to ``inserted_at``.

    Notes:
        A row whose ``collector_tstamp`` is missing or not an ISO timestamp is left out.
    """
    return tuple(collector_latencies_s(rows, inserted_at))


def publish_latencies(
    published_us: Iterable[int | None], inserted_at: datetime
) -> tuple[float, ...]:
    """Return, per message with a publish time (``publish_time_us``), the seconds to ``inserted_at``."""
    inserted_us = (_aware(inserted_at) - _EPOCH) // _MICROSECOND
    return tuple((inserted_us - us) / 1e6 for us in published_us if us is not None)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def _aware(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment
