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
    Every record accounted for, and a delivery acked only when all of its records are
    durable: ``Chunks.first_unsettled(written)`` is the first delivery with a record in a
    chunk not yet written, and ``process_in_chunks`` hands back every delivery from there
    on (a delivery whose records span two chunks is handed back whole if the second was
    not written: its written records come back too, and are absorbed like any redelivery,
    by insertId or by the exactly-once ledger). A delivery with no record at all (an
    empty batch) is acked with those before it.
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
    """A partition's deliveries as chunks of items, read lazily, with where each chunk starts."""

    def __init__(
        self, deliveries: Sequence[PulledMessage], chunk_size: int, decompression: Decompression
    ) -> None:
        self._deliveries = deliveries
        self._size = chunk_size
        self._decompression = decompression
        self._starts: list[int] = []  # per chunk made: the index of its first item's delivery
        self._exhausted = False
        self._reading = 0  # the delivery being read

    def __iter__(self) -> Iterator[list[Item]]:
        """Yield the chunks in order (once)."""
        chunk: list[Item] = []
        opened = 0  # decompressed bytes in ``chunk``
        start = 0
        for index, delivery in enumerate(self._deliveries):
            self._reading = index
            for item in items_of(delivery, self._decompression):
                if not chunk:
                    start = index
                chunk.append(item)
                if item is not delivery:
                    opened += len(item.data) if type(item) is PulledMessage else 0
                if len(chunk) >= self._size or opened >= self._decompression.max_bytes_in_batch:
                    self._starts.append(start)
                    yield chunk
                    chunk, opened = [], 0
        if chunk:
            self._starts.append(start)
            yield chunk
        self._exhausted = True

    def first_unsettled(self, written: int) -> int:
        """Return the index of the first delivery not wholly in the first ``written`` chunks.

        Notes:
            Past the chunks made: the delivery being read (it may be partly read), or,
            once every delivery was read, none.
        """
        if written < len(self._starts):
            return self._starts[written]
        return len(self._deliveries) if self._exhausted else self._reading
