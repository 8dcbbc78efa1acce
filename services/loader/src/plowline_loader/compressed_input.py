"""A partition's deliveries as the pipeline reads them: compressed batches opened into records.

A delivery whose data is a compressed batch (``plowline_core.event.compressed``) is many
events. ``Chunks`` turns a partition's deliveries into the chunks ``process_in_chunks``
writes, opening each batch lazily into one item per record, each carrying its delivery's
ack id:

    record of at most ``max_bytes_single_payload``   a ``PulledMessage`` (id ``<id>#<n>``)
    oversized record                                  a ``FailedRecord``: ``size_violation``
    unknown format version, corrupt or truncated      a ``FailedRecord``: ``loader_parsing_error``

A plain delivery passes through as itself. The failed events are 2.x's
(``failed_record_bad_row``): the payload is the whole compressed message, base64.

Notes:
    Every record accounted for (``Chunks.accounts``: per delivery, which of its records
    are durable and which held), and a delivery settled by the one rule of
    ``source.settlement``: acked once all of its records are durable, nacked when none was
    written, parked in the driver (never handed back) when some were: a delivery whose
    records span two chunks, the second not written, keeps its written records written
    once. A delivery with no record at all (an empty batch) is acked.
    Memory: a chunk closes at ``chunk_size`` items or once the records opened into it
    reach ``max_bytes_in_batch`` bytes (2.x's ``decompression.maxBytesInBatch``, a bound
    on what decompression adds; plain deliveries are held by the partition already and do
    not count), and batches are read as the chunks need them, so what decompression holds
    is a chunk being prepared and one being written.
    Exactly-once mode keys a micro-batch by event id before the tasks run
    (``streaming.by_event_id``), so there a batch that opens cleanly is opened before the
    shuffle (``record_split``: each record keyed by its own event id, its delivery settled
    by the driver once every record is durable) and reaches this module as plain records;
    only a batch that does not open cleanly (its copies keyed by its whole bytes, meeting
    in one task) is opened here, into the same failed events as in the other modes.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from plowline_cloud.pubsub.pulled import PulledMessage
from plowline_core.event.compressed import (
    Record,
    compression_of,
    read_batch,
)

from plowline_loader.batch.failed_events import FailedRecord
from plowline_loader.source.settlement import RecordAccount

MAX_BYTES_SINGLE_PAYLOAD = 10_000_000
"""2.x's default ``decompression.maxBytesSinglePayload``: the longest record read."""

MAX_BYTES_IN_BATCH = 5_242_880
"""2.x's default ``decompression.maxBytesInBatch``: the decompressed bytes one chunk holds."""


@dataclass(frozen=True, slots=True)
class Decompression:
    """How compressed batches are read (2.x's ``decompression`` block)."""

    max_bytes_single_payload: int = MAX_BYTES_SINGLE_PAYLOAD
    max_bytes_in_batch: int = MAX_BYTES_IN_BATCH


DEFAULT_DECOMPRESSION = Decompression()


Item = PulledMessage | FailedRecord


def items_of(delivery: PulledMessage, decompression: Decompression) -> Iterator[Item]:
    """Yield what the pipeline reads of ``delivery``: itself, or its batch's records."""
    compression = compression_of(delivery.data)
    if compression is None:
        yield delivery
        return
    limit = decompression.max_bytes_single_payload
    for number, item in enumerate(read_batch(delivery.data, compression, limit)):
        message_id = f"{delivery.message_id}#{number}"
        if isinstance(item, Record):
            yield delivery._replace(message_id=message_id, data=item.data)
        else:
            yield FailedRecord(
                delivery.ack_id,
                delivery.subscription,
                message_id,
                delivery.publish_time_us,
                delivery.data,
                item,
            )


class Chunks:
    """A partition's deliveries as chunks of items, read lazily, with where each chunk ends."""

    def __init__(
        self, deliveries: Sequence[PulledMessage], chunk_size: int, decompression: Decompression
    ) -> None:
        self._deliveries = deliveries
        self._size = chunk_size
        self._decompression = decompression
        self._ends: list[tuple[int, int]] = []  # per chunk: (delivery, record) after its last
        self._records: list[int] = []  # per delivery read to its end, in order: its item count

    def __iter__(self) -> Iterator[list[Item]]:
        """Yield the chunks in order (once)."""
        chunk: list[Item] = []
        opened = 0  # decompressed bytes in ``chunk``
        for index, delivery in enumerate(self._deliveries):
            count = 0
            for item in items_of(delivery, self._decompression):
                chunk.append(item)
                count += 1
                if item is not delivery:
                    opened += len(item.data) if type(item) is PulledMessage else 0
                if len(chunk) >= self._size or opened >= self._decompression.max_bytes_in_batch:
                    self._ends.append((index, count))
                    yield chunk
                    chunk, opened = [], 0
            self._records.append(count)
        if chunk:
            self._ends.append((len(self._deliveries) - 1, self._records[-1]))
            yield chunk

    def accounts(
        self, written: int, not_durable: frozenset[str], held: frozenset[str]
    ) -> list[RecordAccount]:
        """Return an account per delivery of what its records in the first ``written`` chunks became.

        Notes:
            A record of a written chunk is durable unless its id is in ``not_durable``
            (its publish failed: ``PartlyDelivered``) or in ``held`` (it waits for a
            schema). A delivery not read to its end has no known record count, so it is
            never all durable. Record indices are the items' positions in their delivery
            (a record's id is ``<message id>#<index>``, a plain delivery's its own).
        """
        last, upto = self._ends[written - 1] if written else (0, 0)
        waiting = self._records_named(held)
        failed = self._records_named(not_durable)
        accounts = []
        for index, delivery in enumerate(self._deliveries):
            count = self._records[index] if index < len(self._records) else None
            if index < last:
                done = range(count or 0)
            elif index == last:
                done = range(upto)
            else:
                done = range(0)
            mine = {r for r in done if (index, r) not in failed}
            held_here = frozenset(r for r in mine if (index, r) in waiting)
            accounts.append(
                RecordAccount(
                    delivery.ack_id,
                    delivery.subscription,
                    count,
                    frozenset(mine) - held_here,
                    held_here,
                )
            )
        return accounts

    def _records_named(self, item_ids: frozenset[str]) -> set[tuple[int, int]]:
        """Return the (delivery, record) positions of the items named by ``item_ids``."""
        if not item_ids:
            return set()
        deliveries: dict[str, list[int]] = {}
        for index, delivery in enumerate(self._deliveries):
            deliveries.setdefault(delivery.message_id, []).append(index)
        named: set[tuple[int, int]] = set()
        for item_id in item_ids:
            if item_id in deliveries:
                named.update((index, 0) for index in deliveries[item_id])
                continue
            message_id, _, record = item_id.rpartition("#")
            if record.isdigit():
                named.update((index, int(record)) for index in deliveries.get(message_id, ()))
        return named
