"""File bad rows into the bucket: buffer per partition, write one object per batch, then ack.

An unparseable message is buffered like the others but written as an object of its own
(``layout.unparseable_name``), holding exactly its bytes, named after the message (its
publish time and id) and written create-only: a redelivery the writer does not remember
(another instance wrote it) finds the object already there (``ObjectExists``) and is
acked, never written as a second object.

A bad row delivered again (Pub/Sub's at-least-once: a duplicate delivery, an ack that
arrived late or was lost; or published again by the loader under a new message id) is
never written twice by one writer: it is known by its identity (``identity``), a copy of a
buffered bad row waits beside it and is settled with it, and a copy of one written lately
is acked at once (``deliveries``). "Lately" survives a restart: before it takes messages
the writer is told what it wrote within the lookback (``recall``, from ``lookback``).

Notes:
    At least once: a message is acked only after the object holding it was written; when
    the write fails its messages (and their copies) are nacked and come back. After
    ``close`` every new message is nacked at once, so nothing is left buffered behind a shutdown.
    Thread-safe: Pub/Sub callbacks call ``receive`` from several threads; objects are
    written outside the lock.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import structlog
from plowline_core.config import DeadLetterOptions
from plowline_core.errors import ObjectExists, PlowlineError
from plowline_core.ports import BlobStore, Clock, ReceivedMessage

from plowline_deadletter.batching import Batch, Batcher
from plowline_deadletter.deliveries import Deliveries, Seen
from plowline_deadletter.identity import identity
from plowline_deadletter.layout import (
    UNPARSEABLE,
    UNPARSEABLE_CONTENT_TYPE,
    content_type,
    encode_lines,
    object_name,
    partition_of,
    unparseable_name,
)
from plowline_deadletter.metrics import DeadLetterMetrics, partition_label

_log = structlog.get_logger(__name__)


def _new_id() -> str:
    return uuid.uuid4().hex[:16]


@dataclass(frozen=True, slots=True)
class _Received:
    """A buffered delivery and the identity of its bad row (computed once, on receipt)."""

    message: ReceivedMessage
    key: bytes


class DeadLetterWriter:
    """Turn received bad rows into bucket objects and settle the messages."""

    def __init__(
        self,
        store: BlobStore,
        clock: Clock,
        options: DeadLetterOptions,
        metrics: DeadLetterMetrics,
        new_id: Callable[[], str] = _new_id,
    ) -> None:
        self._store = store
        self._clock = clock
        self._options = options
        self._metrics = metrics
        self._new_id = new_id
        self._batcher: Batcher[_Received] = Batcher(options.window, options.max_rows)
        self._deliveries: Deliveries[ReceivedMessage] = Deliveries()
        self._lock = threading.Lock()
        self._closing = False

    @property
    def pending(self) -> int:
        """Return how many messages wait for their object."""
        with self._lock:
            return self._batcher.pending

    def recall(self, identities: Iterable[bytes]) -> int:
        """Remember bad rows written before this start (identities, oldest first); return the count.

        Notes:
            Called before the first ``receive`` (``lookback``); the count is of all the
            identities remembered, at most the ``Deliveries`` bound.
        """
        with self._lock:
            self._deliveries.remember(identities)
            return self._deliveries.remembered

    def receive(self, message: ReceivedMessage) -> None:
        """Buffer one message; write the batches it completes."""
        partition = partition_of(message.data)
        if partition == UNPARSEABLE:
            self._metrics.unparseable.inc()
        received = _Received(message, identity(message.data))
        with self._lock:
            if self._closing:
                message.nack()
                return
            seen = self._deliveries.admit(received.key, message)
            ready = []
            if seen is Seen.NEW:
                ready = self._batcher.add(partition, received, self._clock.now())
                self._metrics.buffered.set(self._batcher.pending)
        if seen is not Seen.NEW:
            self._metrics.duplicates.inc()
            _log.info("duplicate delivery", message_id=message.message_id, seen=seen.value)
        if seen is Seen.WRITTEN:
            message.ack()
        self._write(ready)

    def tick(self) -> None:
        """Write every batch whose window has closed."""
        with self._lock:
            ready = self._batcher.due(self._clock.now())
            self._metrics.buffered.set(self._batcher.pending)
        self._write(ready)

    def close(self) -> None:
        """Refuse new messages and write everything buffered (graceful shutdown)."""
        with self._lock:
            self._closing = True
            ready = self._batcher.drain()
            self._metrics.buffered.set(0)
        self._write(ready)

    def _write(self, batches: Sequence[Batch[_Received]]) -> None:
        for batch in batches:
            self._write_one(batch)

    def _write_one(self, batch: Batch[_Received]) -> None:
        if batch.key == UNPARSEABLE:
            for received in batch.items:
                self._write_unparseable(received)
            return
        gzip = self._options.gzip
        name = object_name(batch.key, batch.window_start, self._new_id(), gzip)
        body = encode_lines([received.message.data for received in batch.items], gzip)
        try:
            self._store.put(name, body, content_type(gzip))
        except PlowlineError as error:
            # Redelivery is the retry: the rows come back and are buffered again.
            _log.error("object not written", object=name, rows=len(batch.items), error=str(error))
            self._metrics.write_failures.inc()
            for message in self._settle(batch.items, written=False):
                message.nack()
            return
        for message in self._settle(batch.items, written=True):
            message.ack()
        label = partition_label(batch.key)
        self._metrics.objects_written.labels(label).inc()
        self._metrics.rows_written.labels(label).inc(len(batch.items))
        _log.info("object written", object=name, rows=len(batch.items))

    def _settle(self, items: Sequence[_Received], *, written: bool) -> list[ReceivedMessage]:
        """Return the messages of ``items`` and the copies delivered meanwhile, to settle alike."""
        with self._lock:
            copies = [c for i in items for c in self._deliveries.settle(i.key, written=written)]
        return [*(item.message for item in items), *copies]

    def _write_unparseable(self, received: _Received) -> None:
        """Write one unparseable message as an object of its own, its bytes as they came."""
        message = received.message
        name = unparseable_name(message.publish_time, message.message_id)
        try:
            self._store.put(name, message.data, UNPARSEABLE_CONTENT_TYPE)
        except ObjectExists:
            # An earlier delivery of this message wrote it (same publish time and id).
            _log.info("duplicate delivery already written", object=name)
            self._metrics.duplicates.inc()
            for delivery in self._settle([received], written=True):
                delivery.ack()
            return
        except PlowlineError as error:
            _log.error("object not written", object=name, rows=1, error=str(error))
            self._metrics.write_failures.inc()
            for delivery in self._settle([received], written=False):
                delivery.nack()
            return
        for delivery in self._settle([received], written=True):
            delivery.ack()
        self._metrics.objects_written.labels(UNPARSEABLE).inc()
        self._metrics.rows_written.labels(UNPARSEABLE).inc()
        _log.info("object written", object=name, rows=1)
