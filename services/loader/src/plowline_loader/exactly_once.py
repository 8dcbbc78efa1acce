"""What the loader adds to ``ExactlyOnceSink`` so that an event id is written once per micro-batch.

The sink's ledger recognises an event committed by an *earlier* batch. Two copies of one
message in the *same* micro-batch are a different case: Pub/Sub redelivers a message
whose lease lapsed (the source's driver-side probe message waits for partition 0's task,
which can take longer than the ack deadline on a cold first batch), and if the copies
land in two partitions both prepare at once, neither sees the other in the ledger.
So in exactly-once mode the driver keys the micro-batch by event id
(``streaming.by_event_id``, cutting field ``EVENT_ID_INDEX`` of the line: every copy of an
id reaches the same task) and the task writes each id once (``DistinctRowSink``).

Notes:
    Spark-free (the composition root imports it). Keying adds one shuffle but no action:
    the source is still read once.
    The event id is cut from the TSV line by position; a line with fewer fields is keyed
    by its whole text, without decoding it (see ``by_event_id``: nothing in the key may
    raise under Spark's ANSI mode); such lines become bad rows in their task. Not covered: two
    loader processes reading one subscription at once (see ``write_api_pending``).
"""

from __future__ import annotations

from collections.abc import Sequence

from plowline_core.event.fields import ENRICHED_FIELDS
from plowline_core.ports import InsertFailure, Row, RowSink

EVENT_ID_INDEX = [field.name for field in ENRICHED_FIELDS].index("event_id")


class DistinctRowSink:
    """Send each insert id once per call; copies share the outcome of the first (a ``RowSink``)."""

    def __init__(self, sink: RowSink) -> None:
        self._sink = sink

    def insert(self, rows: Sequence[Row]) -> list[InsertFailure]:
        """Insert the first row of each insert id; return failures for every copy refused."""
        first: dict[str, Row] = {}
        for row in rows:
            first.setdefault(row.insert_id, row)
        if len(first) == len(rows):
            return self._sink.insert(rows)
        failures = self._sink.insert(list(first.values()))
        refused = {failure.row.insert_id: failure for failure in failures}
        copies = [
            InsertFailure(row, f.reason, f.message, f.location)
            for row in rows
            if first[row.insert_id] is not row and (f := refused.get(row.insert_id)) is not None
        ]
        return failures + copies

    @property
    def bytes_sent(self) -> int:
        """Bytes the wrapped sink sent (0 when it does not count)."""
        return int(getattr(self._sink, "bytes_sent", 0))
