"""The exactly-once shuffle key: every copy of an event id, in any spelling, reaches one task.

The sink's ledger recognises an event committed by an *earlier* batch. Two copies of one
message in the *same* micro-batch are a different case: Pub/Sub redelivers a message
whose lease lapsed (the source's driver-side probe messages wait for their partitions'
tasks, which can take longer than the ack deadline on a cold first batch), and if the copies
land in two partitions both prepare at once, neither sees the other in the ledger.
So in exactly-once mode the driver keys the micro-batch by event id
(``streaming.by_event_id``: ``event_id_key``, field ``EVENT_ID_INDEX`` of the line lower-
cased, so every copy of an id, in any spelling, reaches the same task) and the task writes
each id once (``DistinctRowSink``, in ``plowline_core.distinct_rows``: the repeater wraps
its exactly-once sink in it too). The ledger and ``DistinctRowSink`` key on the canonical
id (``decode_uuid``: lower case); a key on the raw text sent ``ABC…`` and ``abc…`` to two
tasks, where both committed.

Notes:
    Pure; the driver keys by ``streaming.key_column``, the same key as a Spark
    expression, held to this by a test on real Spark. Keying adds one shuffle but no
    action: the source is still read once.
    The event id is cut from the TSV line by position; a line with fewer fields is keyed
    by its whole text, without decoding it (see ``by_event_id``: nothing in the key may
    raise under Spark's ANSI mode); such lines become bad rows in their task. A compressed
    batch is keyed record by record: the ``pubsub-records`` source opens it into one row
    per record before the shuffle (``record_split``), so a record meets every other copy
    of its id, in a batch or a plain line; a batch that does not open cleanly is one row,
    keyed by its whole bytes. Not covered: two loader processes reading one subscription
    at once (see ``write_api_pending``).
"""

from __future__ import annotations

from plowline_core.event.fields import ENRICHED_FIELDS

EVENT_ID_INDEX = [field.name for field in ENRICHED_FIELDS].index("event_id")


def event_id_key(data: bytes) -> str:
    """Return the shuffle key of a message: its event id field lower-cased, else its whole text.

    Notes:
        The reference for ``streaming.key_column`` (the same key as a Spark expression,
        held to this by a test on real Spark). Every spelling of an id that
        ``decode_uuid`` accepts gives its canonical form, the ledger's key.
    """
    line = data.decode("utf-8", errors="replace")
    fields = line.split("\t", EVENT_ID_INDEX + 1)
    return (fields[EVENT_ID_INDEX] if len(fields) > EVENT_ID_INDEX else line).lower()
