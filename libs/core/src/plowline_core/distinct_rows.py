"""Write each insert id once per call: the copies of a row share the first one's outcome.

The exactly-once sink's ledger recognises an event id committed by an *earlier* call, not
two copies of one event in the *same* call (Pub/Sub delivers at least once: a message and
its duplicate can be processed together). ``DistinctRowSink`` wraps any ``RowSink`` and
sends the first row of each insert id; a copy is refused when its first row is. The
loader's exactly-once tasks and the repeater's exactly-once re-inserts both use it.

Notes:
    Pure: no I/O of its own. Two different events sharing an event id are one event here,
    as in the ledger (Snowplow's synthetic duplicates keep the first).
"""

from __future__ import annotations

from collections.abc import Sequence

from plowline_core.ports import InsertFailure, Row, RowSink


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
    def wrapped(self) -> RowSink:
        """The sink the first row of each insert id goes to."""
        return self._sink

    @property
    def bytes_sent(self) -> int:
        """Bytes the wrapped sink sent (0 when it does not count)."""
        return int(getattr(self._sink, "bytes_sent", 0))
