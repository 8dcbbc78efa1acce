"""What the loader adds to ``ExactlyOnceSink`` so that an event id is written once per micro-batch.

The sink's ledger recognises an event committed by an *earlier* batch. Two copies of one
message in the *same* micro-batch are a different case: Pub/Sub redelivers a message
whose lease lapsed (the source's driver-side probe message waits for partition 0's task,
which can take longer than the ack deadline on a cold first batch), and if the copies
land in two partitions both prepare at once, neither sees the other in the ledger.
So in exactly-once mode the driver keys the micro-batch by event id
(``streaming.by_event_id``, cutting field ``EVENT_ID_INDEX`` of the line: every copy of an
id reaches the same task) and the task writes each id once (``DistinctRowSink``, in
``plowline_core.distinct_rows``: the repeater wraps its exactly-once sink in it too).

Notes:
    Spark-free (the composition root imports it). Keying adds one shuffle but no action:
    the source is still read once.
    The event id is cut from the TSV line by position; a line with fewer fields is keyed
    by its whole text, without decoding it (see ``by_event_id``: nothing in the key may
    raise under Spark's ANSI mode); such lines become bad rows in their task. Not covered: two
    loader processes reading one subscription at once (see ``write_api_pending``).
"""

from __future__ import annotations

from plowline_core.distinct_rows import DistinctRowSink
from plowline_core.event.fields import ENRICHED_FIELDS

__all__ = ["EVENT_ID_INDEX", "DistinctRowSink"]  # DistinctRowSink: shared with the repeater

EVENT_ID_INDEX = [field.name for field in ENRICHED_FIELDS].index("event_id")
