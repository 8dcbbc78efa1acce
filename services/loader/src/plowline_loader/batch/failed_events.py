"""The failed events of a 2.x config (column mode ``major``), as the 2.x loader writes them.

Loader 2.x has no failedInserts topic and no repeater: what it cannot write goes to its
bad topic. So for a 2.x config the loader writes 2.x's shapes where they differ from 1.x's:

    a row the table refuses as invalid       loader_runtime_error: failure = the table's
    (``InsertReason.INVALID``)               message, payload = the event (as
                                             ``loader_iglu_error``'s payload)
    a failed event over ``max_bad_row_bytes``  size_violation: expectation ``Badrow exceeds
                                             allowed max size``, actual = the failed event's
                                             size, payload = its first tenth-of-the-limit
                                             bytes (2.x's ``BadRowsSerializer.withMaxSize``)

Rows refused for a column the table lacks still go to failedInserts (the mutator adds the
column, the repeater writes them), as do rows not attempted (``stopped``); 2.x itself
waits for its own column changes instead. Parsing, Iglu and compressed-batch failures have
the same shapes in both (``loader_parsing_error/2-0-0``, ``loader_iglu_error/2-0-0``,
``size_violation/1-0-0``). A compressed delivery's record that is not a line
(oversized, or a corrupt batch) is a ``FailedRecord`` (``compressed_input`` opens the
batches), written as ``failed_record_bad_row``.

Notes:
    Pure. 2.x stamps a size violation with the moment it found it; plowline with the
    message's publish time (``sizes``: the same bytes on every delivery).
"""

from __future__ import annotations

import base64
from enum import StrEnum
from typing import NamedTuple

from plowline_core.badrows import (
    BadRow,
    ParsingErrorRow,
    Processor,
    RuntimeErrorRow,
    SizeViolationRow,
)
from plowline_core.event.compressed import CorruptBatch, OversizedRecord
from plowline_core.event.json import event_payload
from plowline_core.event.model import EnrichedEvent
from plowline_core.event.parser import parse_bytes
from plowline_core.ports import InsertFailure, InsertReason

BAD_ROW_TOO_BIG = "Badrow exceeds allowed max size"
"""2.x's expectation for a failed event over the bad topic's size limit."""


class FailedEventStyle(StrEnum):
    """Whose failed events the loader writes: 1.x's (and failedInserts) or 2.x's."""

    LOADER_1X = "1.x"
    LOADER_2X = "2.x"


def runtime_error(failure: InsertFailure, line: bytes) -> RuntimeErrorRow | None:
    """Return 2.x's ``loader_runtime_error`` for a row the table refused, None if not 2.x's case.

    Notes:
        Only ``INVALID`` refusals are runtime errors (2.x: a row the Write API's
        serialisation refuses). The payload is the line parsed again: it parsed once to
        make the row, so it parses again; a line that somehow does not yields None.
    """
    if failure.reason is not InsertReason.INVALID:
        return None
    event = parse_bytes(line)
    if not isinstance(event, EnrichedEvent):
        return None
    return RuntimeErrorRow(failure.message, event_payload(event))


def oversized_failed_event(encoded: bytes, limit: int, timestamp: str) -> SizeViolationRow:
    """Return 2.x's size violation for an encoded failed event over ``limit`` bytes."""
    head = encoded[: limit // 10].decode("utf-8", "ignore")  # a cut character is dropped
    return SizeViolationRow(limit, len(encoded), BAD_ROW_TOO_BIG, head, timestamp)


class FailedRecord(NamedTuple):
    """What a compressed delivery gave that is not a line: an oversized record or a corrupt batch.

    ``data`` is the whole compressed message (the failed event's payload); the other
    fields are the delivery's, but ``message_id`` (``<id>#<n>``).
    """

    ack_id: str
    subscription: str
    message_id: str
    publish_time_us: int
    data: bytes
    failure: OversizedRecord | CorruptBatch


def failed_record_bad_row(
    failure: OversizedRecord | CorruptBatch,
    message: bytes,
    timestamp: str,
    max_bad_row_bytes: int,
    processor: Processor,
) -> BadRow:
    """Return the failed event 2.x writes for ``failure`` of the compressed ``message``.

    Notes:
        A corrupt batch is a ``loader_parsing_error`` whose failure is a
        ``RowDecodingError`` with one ``UnhandledRowDecodingError`` naming the problem;
        an oversized record a ``size_violation`` (maximum: the limit, actual: the
        record's size); both carry the compressed message in base64 (cut to fit
        ``max_bad_row_bytes`` for the size violation, whose schema allows a cut payload).
    """
    payload = base64.b64encode(message).decode("ascii")
    if isinstance(failure, CorruptBatch):
        error = {"type": "UnhandledRowDecodingError", "message": failure.message}
        return ParsingErrorRow({"type": "RowDecodingError", "errors": [error]}, payload)
    violation = SizeViolationRow.for_payload(
        payload, max_bad_row_bytes, failure.expectation, timestamp, processor
    )
    return SizeViolationRow(
        failure.limit, failure.size, failure.expectation, violation.payload, timestamp
    )
