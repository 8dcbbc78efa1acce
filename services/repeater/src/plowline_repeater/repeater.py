"""Re-insert failed inserts once they fit; dead-end those that never will.

Notes:
    At least once: a message is acked only after its row is in the table or its bad row is
    in a dead-end object. A waiting message stays leased (the streaming-pull client extends
    it), so the subscriber's flow control bounds how many are held. ``receive`` runs on
    Pub/Sub callback threads and only records; ``step`` (one loop thread) decides, inserts
    and writes.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

import structlog
from plowline_core.badrows import Processor, RecoveryErrorRow
from plowline_core.config import RepeaterOptions
from plowline_core.errors import PlowlineError
from plowline_core.event.latency import collector_latency_s
from plowline_core.messages import FailedInsert, MessageError, decode_failed_insert
from plowline_core.ports import (
    BlobStore,
    Clock,
    ReceivedMessage,
    Row,
    RowSink,
    TableSchemaStore,
)

from plowline_repeater.dead_end import (
    DeadEndBuffer,
    object_name,
    parsing_error_row,
    runtime_error_row,
)
from plowline_repeater.decision import Attempt, DeadEnd, Insert, deadline, decide
from plowline_repeater.metrics import RepeaterMetrics

_log = structlog.get_logger(__name__)


@dataclass(slots=True)
class _Waiting:
    message: ReceivedMessage
    failed: FailedInsert
    until: datetime  # first seen (the message's publish time) + backoff
    last: Attempt | None = None


def _new_id() -> str:
    return uuid.uuid4().hex[:16]


class Repeater:
    """Hold failed inserts until they fit, insert them, and dead-end the hopeless ones."""

    def __init__(
        self,
        sink: RowSink,
        schema: TableSchemaStore,
        store: BlobStore,
        clock: Clock,
        options: RepeaterOptions,
        processor: Processor,
        metrics: RepeaterMetrics,
        new_id: Callable[[], str] = _new_id,
    ) -> None:
        self._sink = sink
        self._schema = schema
        self._store = store
        self._clock = clock
        self._options = options
        self._processor = processor
        self._metrics = metrics
        self._new_id = new_id
        self._lock = threading.Lock()
        self._waiting: list[_Waiting] = []
        self._dead: DeadEndBuffer[ReceivedMessage] = DeadEndBuffer(
            options.buffer_size, options.window
        )
        self._closing = False
        self._table_readable = True
        self.arrived = threading.Event()

    @property
    def ready(self) -> bool:
        """Return False while the table's schema cannot be read (rows wait; nothing is lost)."""
        return self._table_readable

    @property
    def waiting(self) -> int:
        """Return how many failed inserts are held, waiting to fit."""
        with self._lock:
            return len(self._waiting)

    def receive(self, message: ReceivedMessage) -> None:
        """Take one failed-insert message (decided on the next ``step``).

        Notes:
            The backoff runs from the message's publish time, when the loader first saw the
            insert fail; a redelivery carries the same time, so a restart does not reset it.
        """
        decoded = decode_failed_insert(message.data)
        with self._lock:
            if self._closing:
                message.nack()
                return
            if isinstance(decoded, MessageError):
                self._bury(message, parsing_error_row(message.data, decoded))
            else:
                until = deadline(message.publish_time, self._options.backoff_period)
                self._waiting.append(_Waiting(message, decoded, until))
                self._metrics.waiting.set(len(self._waiting))
        self.arrived.set()

    def step(self) -> None:
        """Decide every held row, insert those that may go, write a due dead-end object."""
        self.arrived.clear()
        with self._lock:
            held = list(self._waiting)
        if held:
            self._settle(held)
        self._flush(force=False)

    def close(self) -> None:
        """Refuse new messages, write the dead-end buffer, give waiting rows back."""
        with self._lock:
            self._closing = True
            held, self._waiting = self._waiting, []
            self._metrics.waiting.set(0)
        for item in held:
            item.message.nack()  # another instance takes them on; nothing is lost
        self._flush(force=True)

    def _settle(self, held: list[_Waiting]) -> None:
        try:
            fields = self._schema.fields()
        except PlowlineError as error:
            # However long BigQuery stays away, keep the rows leased and try again next step:
            # exiting would only have them redelivered to a repeater that fails the same way.
            if self._table_readable:
                _log.error("table schema unreadable; rows wait", error=str(error))
            self._table_readable = False
            self._metrics.failures.labels("schema").inc()
            return
        if not self._table_readable:
            _log.info("table schema readable again", waiting=len(held))
        self._table_readable = True
        now = self._clock.now()
        to_insert: list[_Waiting] = []
        done: list[_Waiting] = []
        for item in held:
            decision = decide(item.failed, fields, now, item.until, item.last)
            if isinstance(decision, Insert):
                to_insert.append(item)
            elif isinstance(decision, DeadEnd):
                done.append(item)
                self._bury_insert(item, decision)
        done.extend(self._insert(to_insert))
        with self._lock:
            gone = {id(item) for item in done}
            self._waiting = [item for item in self._waiting if id(item) not in gone]
            self._metrics.waiting.set(len(self._waiting))

    def _insert(self, items: list[_Waiting]) -> list[_Waiting]:
        """Insert rows; return the items settled (landed, or dead-ended after a last refusal)."""
        if not items:
            return []
        rows = {id(row): (row, item) for item in items for row in [_row(item.failed)]}
        try:
            failures = self._sink.insert([row for row, _ in rows.values()])
        except PlowlineError as error:
            _log.warning("re-insert failed, retrying", rows=len(items), error=str(error))
            self._metrics.failures.labels("insert").inc()
            return []
        now = self._clock.now()
        refused = {id(failure.row): failure for failure in failures}
        settled: list[_Waiting] = []
        latencies: list[float] = []
        waits: list[float] = []
        for key, (row, item) in rows.items():
            failure = refused.get(key)
            if failure is None:
                item.message.ack()
                self._metrics.reinserted.inc()
                latency = collector_latency_s(row.data, now)
                if latency is not None:
                    latencies.append(latency)
                waits.append((now - item.message.publish_time).total_seconds())
                _log.debug("re-inserted", event_id=item.failed.event_id)
                settled.append(item)
                continue
            item.last = Attempt(now, failure)
            decision = decide(item.failed, (), now, item.until, item.last)
            if isinstance(decision, DeadEnd):
                self._bury_insert(item, decision)
                settled.append(item)
        self._metrics.collector_latency.observe_many(latencies)
        self._metrics.wait.observe_many(waits)
        return settled

    def _bury_insert(self, item: _Waiting, decision: DeadEnd) -> None:
        with self._lock:
            self._bury(item.message, runtime_error_row(item.failed, decision.failure))

    def _bury(self, message: ReceivedMessage, row: RecoveryErrorRow) -> None:
        """Buffer a bad row (caller holds the lock)."""
        self._dead.add(message, row.to_json(self._processor), self._clock.now())
        self._metrics.dead_ended.labels(row.code.value).inc()
        _log.debug("dead-ended", code=row.code.value, buffered=len(self._dead))

    def _flush(self, force: bool) -> None:
        with self._lock:
            if not len(self._dead) or not (force or self._dead.ready(self._clock.now())):
                return
            messages, body = self._dead.take()
        name = object_name(self._clock.now(), self._new_id())
        try:
            self._store.put(name, body)
        except PlowlineError as error:
            # Redelivery is the retry: the rows come back, are decided again, dead-end again.
            _log.error("dead-end object not written", object=name, error=str(error))
            self._metrics.failures.labels("dead_end").inc()
            for message in messages:
                message.nack()
            return
        for message in messages:
            message.ack()
        self._metrics.objects_written.inc()
        _log.info("dead-end object written", object=name, rows=len(messages))


def _row(failed: FailedInsert) -> Row:
    return Row(insert_id=failed.event_id, data=failed.row)
