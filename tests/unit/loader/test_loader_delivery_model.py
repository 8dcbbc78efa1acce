"""A model of the delivery path: Pub/Sub, the tasks' settlement and the driver's holding.

The real ``partition.process_in_chunks`` (with ``settlement.verdict``) and the real
``source.holding.Holding`` run against a model of Pub/Sub (ack ids per delivery, leases
that can lapse, nacks, deadlines set for later) and a fake processor whose records are
good, held until their schema appears, or stopped by a failing insert. Hypothesis drives
arbitrary interleavings of short pulls (any size), compressed and plain messages, failing
chunks, crashed tasks (Spark's task retry pulls afresh: the crashed attempt acked
nothing), parked deliveries retried, lost acks and lapsed leases. It holds:

- **never acked early**: an ack reaches Pub/Sub only when every record of the message is
  in the table;
- **never written twice by design**: a record is written twice only if its message was
  delivered again after an unkind event (a lapsed lease, a lost ack, a crashed task);
  a parked message's siblings, a short pull or a failing chunk never rewrite one;
- **nothing lost**: once the schema exists and nothing fails, draining acks every message
  with every record in the table.

The acking partition's part (ack all but what is handed back or kept, nack what is handed
back) is the three lines of ``_settle_task``, as in ``source.acking.AckingPartition``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from plowline_cloud.pubsub.pulled import PulledMessage
from plowline_core.errors import TransientError
from plowline_core.event.compressed import Compression, write_batch
from plowline_loader.batch.outcome import BatchOutcome
from plowline_loader.partition import process_in_chunks
from plowline_loader.source.holding import Holding

pytestmark = pytest.mark.unit

SUBSCRIPTION = "projects/p/subscriptions/in"


class ModelPubSub:
    """Pub/Sub as the loader sees it: deliveries with ack ids, leases, acks and nacks."""

    def __init__(self, table: Counter[str]) -> None:
        self.table = table
        self.messages: dict[str, list[str]] = {}  # message id → its record ids
        self.data: dict[str, bytes] = {}
        self.waiting: list[str] = []  # message ids deliverable now
        self.later: list[str] = []  # deliverable once time passes
        self.outstanding: dict[str, str] = {}  # ack id → message id
        self.acked: set[str] = set()
        self.tainted: set[str] = set()  # delivered again after an unkind event
        self.fail_next_ack = False
        self._ack_ids = 0

    def publish(self, message_id: str, records: list[str], compressed: bool) -> None:
        self.messages[message_id] = records
        payload = [r.encode() for r in records]
        self.data[message_id] = write_batch(payload, Compression.GZIP) if compressed else payload[0]
        self.waiting.append(message_id)

    def pull(self, count: int) -> list[PulledMessage]:
        taken, self.waiting = self.waiting[:count], self.waiting[count:]
        pulled = []
        for message_id in taken:
            self._ack_ids += 1
            ack_id = f"ack-{self._ack_ids}"
            self.outstanding[ack_id] = message_id
            pulled.append(PulledMessage(ack_id, SUBSCRIPTION, message_id, 0, self.data[message_id]))
        return pulled

    def ack(self, ack_ids: Sequence[str]) -> None:
        if self.fail_next_ack:
            self.fail_next_ack = False
            raise TransientError("acknowledge: 503 (the ack is lost)")
        for ack_id in ack_ids:
            message_id = self.outstanding.pop(ack_id, None)
            if message_id is None:
                continue  # a stale ack id: Pub/Sub ignores it
            missing = [r for r in self.messages[message_id] if not self.table[r]]
            assert missing == [], f"{message_id} acked before {missing} were written"
            self.acked.add(message_id)

    def nack(self, ack_ids: Sequence[str]) -> None:
        for ack_id in ack_ids:
            message_id = self.outstanding.pop(ack_id, None)
            if message_id is not None and message_id not in self.acked:
                self.waiting.append(message_id)

    def modack(self, ack_ids: Sequence[str], seconds: int) -> None:
        if seconds >= 60:
            return  # a lease extension
        for ack_id in ack_ids:  # a hand-back for later
            message_id = self.outstanding.pop(ack_id, None)
            if message_id is not None:
                self.later.append(message_id)

    def lapse(self, index: int) -> None:
        """A lease lapses (an extension lost): the message is delivered again."""
        if not self.outstanding:
            return
        ack_id = sorted(self.outstanding)[index % len(self.outstanding)]
        message_id = self.outstanding.pop(ack_id)
        self.tainted.add(message_id)
        self.waiting.append(message_id)


class ModelProcessor:
    """Writes good records; holds ``held:`` records until the schema exists; fails on demand."""

    def __init__(self, table: Counter[str]) -> None:
        self.table = table
        self.schema = False
        self.failing_writes: set[int] = set()
        self.writes = 0

    def prepare(self, messages: Sequence[Any]) -> Sequence[Any]:
        return messages

    def deliver(self, messages: Sequence[Any]) -> BatchOutcome:
        self.writes += 1
        if self.writes in self.failing_writes:
            raise TransientError("insert: 503")
        held = set()
        for message in messages:
            record = message.data.decode()
            if record.startswith("held:") and not self.schema:
                held.add(message.message_id)
                continue
            self.table[record] += 1
        written = len(messages) - len(held)
        return BatchOutcome(written, written, held_ids=frozenset(held))

    def process(self, messages: Sequence[Any]) -> BatchOutcome:
        return self.deliver(self.prepare(messages))


class DeliveryPath(RuleBasedStateMachine):
    """Short pulls, parked deliveries, failing chunks, crashes, lost acks, lapsed leases."""

    @initialize()
    def start(self) -> None:
        self.table: Counter[str] = Counter()
        self.pubsub = ModelPubSub(self.table)
        self.processor = ModelProcessor(self.table)
        self.holding = Holding(
            lambda _path: self.pubsub,
            lambda: self.processor,
            retry_s=60.0,
            max_bytes=1 << 30,
            monotonic=lambda: 0.0,
            background=False,
        )
        self.published = 0

    @rule(
        records=st.lists(st.sampled_from(["good", "held"]), min_size=1, max_size=5),
        compressed=st.booleans(),
    )
    def publish(self, records: list[str], compressed: bool) -> None:
        self.published += 1
        message_id = f"m{self.published}"
        kinds = records if compressed else records[:1]
        ids = [
            f"held:{message_id}.{n}" if kind == "held" else f"{message_id}.{n}"
            for n, kind in enumerate(kinds)
        ]
        self.pubsub.publish(message_id, ids, compressed)

    @rule(
        pulled=st.integers(0, 6),
        chunk=st.integers(1, 4),
        failing=st.sets(st.integers(1, 4), max_size=2),
    )
    def task(self, pulled: int, chunk: int, failing: set[int]) -> None:
        """A task: a pull of any size (short or empty), processed, settled."""
        rows = self.pubsub.pull(pulled)
        self.processor.writes = 0
        self.processor.failing_writes = failing
        report, handed_back = process_in_chunks(self.processor, rows, chunk)
        self.processor.failing_writes = set()
        self._settle_task(rows, handed_back, [p.ack_id for p in report.parked])
        self.holding.take(report.parked)

    @rule(pulled=st.integers(1, 6))
    def crashed_task(self, pulled: int) -> None:
        """A task that writes, then dies before settling (a lost executor): its leases lapse,
        and Spark's retry of it pulls afresh (it does not replay what it was given)."""
        rows = self.pubsub.pull(pulled)
        process_in_chunks(self.processor, rows, 2)
        for row in rows:
            self.pubsub.tainted.add(row.message_id)
            message_id = self.pubsub.outstanding.pop(row.ack_id, None)
            if message_id is not None:
                self.pubsub.waiting.append(message_id)

    @rule()
    def schema_appears(self) -> None:
        self.processor.schema = True

    @rule()
    def holding_retries(self) -> None:
        self.holding.retry_due(everything=True)

    @rule()
    def ack_lost(self) -> None:
        """The next ack call fails for good (its messages come back: a duplicate, allowed)."""
        self.pubsub.fail_next_ack = True

    @rule(index=st.integers(0, 50))
    def lease_lapses(self, index: int) -> None:
        self.pubsub.lapse(index)

    @rule()
    def time_passes(self) -> None:
        """Deliveries handed back for later are deliverable again."""
        self.pubsub.waiting.extend(self.pubsub.later)
        self.pubsub.later = []

    def _settle_task(self, rows: list[PulledMessage], now: list[str], kept: list[str]) -> None:
        ids = [row.ack_id for row in rows]
        done = [i for i in ids if i not in now and i not in kept]
        try:
            self.pubsub.ack(done)
        except TransientError:
            for ack_id in done:  # the ack was lost: the lease lapses, delivered again
                message_id = self.pubsub.outstanding.pop(ack_id, None)
                if message_id is not None:
                    self.pubsub.tainted.add(message_id)
                    self.pubsub.waiting.append(message_id)
        self.pubsub.nack([i for i in ids if i in now])

    @invariant()
    def no_record_written_twice_by_design(self) -> None:
        twice = [r for r, n in self.table.items() if n > 1]
        untainted = [r for r in twice if r.split(":")[-1].split(".")[0] not in self.pubsub.tainted]
        assert untainted == []

    def teardown(self) -> None:
        """Drain: the schema exists, nothing fails: every message acked, every record in."""
        if not hasattr(self, "pubsub"):
            return
        self.processor.schema = True
        self.pubsub.fail_next_ack = False
        for _ in range(20):
            self.time_passes()
            self.holding.retry_due(everything=True)
            if self.pubsub.waiting:
                self.task(len(self.pubsub.waiting), 3, set())
        assert (set(self.pubsub.messages), []) == (
            self.pubsub.acked,
            [r for m in self.pubsub.messages.values() for r in m if not self.table[r]],
        )


TestDeliveryPath = DeliveryPath.TestCase
TestDeliveryPath.settings = settings(max_examples=150, stateful_step_count=30, deadline=None)
