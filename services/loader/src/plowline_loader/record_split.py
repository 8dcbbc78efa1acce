"""Exactly-once mode's compressed deliveries split into records before the shuffle, and back.

The exactly-once shuffle keys each row by its event id (``streaming.by_event_id``), so
a compressed batch, many events, must be opened before it: else it is keyed by its whole
bytes, and two batches (or a batch and a plain line) holding one event id are written by
two tasks at once, both committing. So the ``pubsub-records`` source
(``source.record_source``) reads each pull through here, on the executor:

    plain delivery                                      one row, as itself
    compressed batch that opens cleanly (format         one row per record: the record's
    version 1, whole, every record a line of at most    line, the delivery's ack id,
    ``max_bytes_single_payload``, at least one record)  subscription and message id, its
                                                        index and the record count
    any other compressed batch (unknown version,        one row, as itself: the task opens
    corrupt, truncated, an oversized record, empty,     it as before (``compressed_input``),
    a record that is itself compressed)                 into the same failed events

A task then rebuilds each record as the ``PulledMessage`` ``compressed_input`` would have
made (message id ``<id>#<n>``) and tracks, per split delivery, which records it holds
(``SplitTracker``): it never acks a split delivery itself, it reports a
``source.settlement.RecordAccount`` and the driver settles it.

Notes:
    Memory: a batch is read twice, streaming both times (``read_batch``), never held
    whole: once when pulled, to count its records and their bytes (``Surveyor``), once
    to yield its rows, cut into groups whose opened bytes stay under
    ``max_bytes_in_batch`` (2.x's ``decompression.maxBytesInBatch``). After the shuffle
    a task holds its share of the opened records (``AckingPartition`` lists its rows),
    where it held compressed batches before; so the pulls weigh a batch by its opened
    bytes (``pulls.pull_bounded``'s ``weigh``): ``maxBytesPerPartition`` and the pull
    ceiling (``pulls.pull_size``) bound opened bytes as they bounded compressed ones.
    What this does not bound, as before: the first pull, sized before any weight is
    known (~51 messages), and one pull's overshoot past the budget.
    CPU: opening twice costs ~13 to 16 µs a record (gzip, zstd; 1,000-record batches of
    enriched lines), against ~7 to 10 µs to open once in the task before.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from plowline_cloud.pubsub.pulled import PulledMessage, pulled_of_row
from plowline_core.event.compressed import Record, compression_of, read_batch

from plowline_loader.compressed_input import Decompression
from plowline_loader.source.settlement import RecordAccount

if TYPE_CHECKING:
    from pyspark.sql import Row


@dataclass(frozen=True, slots=True)
class Opening:
    """A compressed batch that opens cleanly: its record count and their bytes."""

    records: int
    opened: int


def survey(data: bytes, decompression: Decompression) -> Opening | None:
    """Return what a compressed batch opens into, or None: a plain line or no clean opening."""
    compression = compression_of(data)
    if compression is None:
        return None
    records = opened = 0
    for item in read_batch(data, compression, decompression.max_bytes_single_payload):
        if not isinstance(item, Record) or compression_of(item.data) is not None:
            return None
        records, opened = records + 1, opened + len(item.data)
    return Opening(records, opened) if records else None


class SplitRow(NamedTuple):
    """A row of the ``records`` source: a delivery, or one record of it (``data`` its line)."""

    message: PulledMessage
    record: int | None = None  # the record's index in its batch
    records: int | None = None  # the batch's record count


class Surveyor:
    """The pull budget's weight of a delivery; keeps each compressed batch's ``Opening``."""

    def __init__(self, decompression: Decompression) -> None:
        self.decompression = decompression
        self.openings: dict[str, Opening] = {}

    def __call__(self, message: PulledMessage) -> int:
        """Return what ``message`` counts against the byte budget (opened, if it opens)."""
        opening = survey(message.data, self.decompression)
        if opening is None:
            return message.size
        self.openings[message.ack_id] = opening
        return message.size - len(message.data) + opening.opened


def split_rows(pulled: Sequence[PulledMessage], surveyor: Surveyor) -> Iterator[list[SplitRow]]:
    """Yield one pull's rows in groups, each group's opened bytes under ``max_bytes_in_batch``.

    Notes:
        Takes each delivery's ``Opening`` out of ``surveyor`` (which weighed the pull).
    """
    limit = surveyor.decompression.max_bytes_single_payload
    group: list[SplitRow] = []
    opened = 0
    for message in pulled:
        opening = surveyor.openings.pop(message.ack_id, None)
        compression = compression_of(message.data)
        if opening is None or compression is None:
            group.append(SplitRow(message))
            continue
        items = read_batch(message.data, compression, limit)
        records = (item for item in items if isinstance(item, Record))  # all are: it opened
        for index, record in enumerate(records):
            group.append(SplitRow(message._replace(data=record.data), index, opening.records))
            opened += len(record.data)
            if opened >= surveyor.decompression.max_bytes_in_batch:
                yield group
                group, opened = [], 0
    if group:
        yield group


@dataclass(slots=True)
class _Held:
    subscription: str
    message_id: str
    records: int
    indices: list[int]


class SplitTracker:
    """A task's split deliveries: which of their records it holds, then what became of them."""

    def __init__(self) -> None:
        self._held: dict[str, _Held] = {}

    @property
    def ack_ids(self) -> frozenset[str]:
        """The ack ids of the split deliveries seen so far."""
        return frozenset(self._held)

    def messages(
        self, rows: Iterable[Row], skip: frozenset[str] = frozenset()
    ) -> Iterator[PulledMessage]:
        """Yield the ``records`` source's rows as deliveries, a record as ``<id>#<n>``.

        Notes:
            A row whose id is in ``skip`` (durable in an earlier attempt of the same
            action: ``streaming``) is not yielded; a record of a split delivery is still
            counted among its delivery's records, as durable.
        """
        for row in rows:
            message = pulled_of_row(row)
            record = row["record"]
            if record is None:
                if message.message_id not in skip:
                    yield message
                continue
            held = self._held.get(message.ack_id)
            if held is None:
                held = _Held(message.subscription, message.message_id, row["records"], [])
                self._held[message.ack_id] = held
            held.indices.append(record)
            record_id = f"{message.message_id}#{record}"
            if record_id not in skip:
                yield message._replace(message_id=record_id)

    def accounts(
        self, not_durable: Collection[str], held_ids: Collection[str]
    ) -> tuple[RecordAccount, ...]:
        """Return an account per split delivery, given the ack ids handed back and held ids.

        Notes:
            A handed-back ack id has a record not durable in this task: none of its
            records is counted durable (the delivery is nacked and comes back whole).
        """
        accounts = []
        for ack_id, held in self._held.items():
            if ack_id in not_durable:
                accounts.append(RecordAccount(ack_id, held.subscription, held.records))
                continue
            waiting = frozenset(i for i in held.indices if f"{held.message_id}#{i}" in held_ids)
            durable = frozenset(held.indices) - waiting
            accounts.append(
                RecordAccount(ack_id, held.subscription, held.records, durable, waiting)
            )
        return tuple(accounts)
