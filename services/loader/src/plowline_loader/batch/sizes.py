"""What a row, a bad row and a failed insert may weigh, and what one over its limit becomes;
how many messages are written together (``CHUNK_MESSAGES``).

Every outcome of a message has to fit where it goes: a row one insertAll request, a bad
row and a failed insert one Pub/Sub message. One that does not fit would make its request
fail for the whole batch, again on every redelivery, so it becomes a ``size_violation``
bad row instead, whose payload is the start of the line and whose failure says which
limit was passed and by how much, and whose ``timestamp`` is the source message's
publish time (see Notes):

    row over ``max_row_bytes``                       size_violation (BigQuery's limit)
    bad row over ``max_bad_row_bytes``               size_violation, code ``size.row``
                                                     (2.x's shape for a 2.x config:
                                                     ``failed_events``)
    failed insert over ``max_failed_insert_bytes``   size_violation (not a failed insert)

Notes:
    Pure. A size violation is stamped with ``at``, the moment its message was published
    (``Message.publish_time_us``; the batch's start only for a file, which has none),
    never the clock: every delivery of a message then yields the same bytes, so a copy
    republished after a redelivery or a crash is recognised by any consumer comparing
    bytes (plowline's dead-letter writer also ignores the moments a failure records,
    ``plowline_deadletter.identity``). Snowplow
    stamps the time the violation was found; the publish time is at most that.
    The Pub/Sub client refuses a publish request over 10,000,000 bytes before it is
    sent (``MessageTooLargeError``); the budgets leave room for the topic path and framing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import orjson
from plowline_core.badrows import BadRow, Processor, SizeViolationRow
from plowline_core.messages import encode_failed_insert
from plowline_core.ports import InsertFailure
from plowline_core.transform.row import TransformedRow

from plowline_loader.batch.failed_events import FailedEventStyle, oversized_failed_event

CHUNK_MESSAGES = 2000
"""Messages processed together: one insertAll request's worth (see ``process_in_chunks``).

Four times BigQuery's advised 500 rows (its limits are 50,000 rows and 10 MB a request;
the sinks split a larger chunk by bytes): each request, publish and chunk has a fixed CPU
cost in Python (~0.4 ms an HTTP request through google-cloud-core and requests), and 500
made it a quarter of the deliver thread's CPU."""

BIGQUERY_REQUEST_BYTES = 10_000_000  # insertAll request limit: one row must fit in one request
PUBSUB_REQUEST_BYTES = 10_000_000  # the Pub/Sub client refuses a bigger publish request
# Room for the rest of a one-message publish request (topic path, framing, attributes).
_PUBLISH_OVERHEAD = 64 * 1024
PUBSUB_MESSAGE_BYTES = PUBSUB_REQUEST_BYTES - _PUBLISH_OVERHEAD
"""The largest message body the loader publishes (bad rows, failed inserts)."""

_ROW_OVERHEAD = 64  # {"insertId": …, "json": …} around each row in the request
# JSON escaping makes a string at most 6x longer (\u00XX): lines below this bound cannot
# produce an oversized row, so the common case skips serialising the row to measure it.
_ESCAPE_FACTOR = 6


@dataclass(frozen=True, slots=True)
class Limits:
    """Size limits: a row must fit one insertAll request, a bad row and a failed insert one
    Pub/Sub message."""

    max_row_bytes: int = BIGQUERY_REQUEST_BYTES
    max_bad_row_bytes: int = 6_900_000
    max_failed_insert_bytes: int = PUBSUB_MESSAGE_BYTES


class SizeChecks:
    """Apply ``Limits`` to a batch's outcomes, replacing what does not fit."""

    def __init__(
        self,
        limits: Limits,
        processor: Processor,
        style: FailedEventStyle = FailedEventStyle.LOADER_1X,
    ) -> None:
        self.limits = limits
        self._processor = processor
        self._style = style

    def may_be_oversized(self, line: bytes) -> bool:
        """Say whether the row of ``line`` could be over ``max_row_bytes`` (False: it cannot).

        Notes:
            The common case, answered without serialising the row nor making its stamp.
        """
        return len(line) * _ESCAPE_FACTOR + _ROW_OVERHEAD * 1024 >= self.limits.max_row_bytes

    def oversized_row(
        self, row: TransformedRow, line: bytes, at: datetime
    ) -> SizeViolationRow | None:
        """Return the size violation (stamped ``at``) of a row over ``max_row_bytes``, else None."""
        limit = self.limits.max_row_bytes
        if not self.may_be_oversized(line):
            return None
        size = encoded_row_size(row)
        if size <= limit:
            return None
        expectation = (
            f"row of {size} bytes exceeds BigQuery's insertAll request limit of {limit} bytes"
        )
        return SizeViolationRow.for_payload(
            line, self.limits.max_bad_row_bytes, expectation, iso_stamp(at), self._processor
        )

    def bad_row(self, bad: BadRow, line: bytes, at: datetime) -> tuple[bytes, str]:
        """Return the bad row to publish and its failure code (``size.row`` when replaced)."""
        encoded = bad.to_json(self._processor)
        limit = self.limits.max_bad_row_bytes
        if len(encoded) <= limit:
            return encoded, str(bad.code)
        if self._style is FailedEventStyle.LOADER_2X:
            violation = oversized_failed_event(encoded, limit, iso_stamp(at))
            return violation.to_json(self._processor), str(violation.code)
        expectation = f"bad row of {len(encoded)} bytes exceeds the {limit}-byte Pub/Sub budget"
        return self.violation(line, expectation, at)

    def failed_insert(
        self, failure: InsertFailure, line: bytes, at: datetime
    ) -> tuple[bytes, str | None]:
        """Return the failedInserts payload and None, or a size violation and its code."""
        payload = encode_failed_insert(failure.row.data)
        limit = self.limits.max_failed_insert_bytes
        if len(payload) <= limit:
            return payload, None
        expectation = (
            f"failed insert of {len(payload)} bytes exceeds the {limit}-byte Pub/Sub budget "
            f"(the table said {failure.reason}: {failure.message})"
        )
        return self.violation(line, expectation, at)

    def violation(self, line: bytes, expectation: str, at: datetime) -> tuple[bytes, str]:
        """Return a size violation holding the start of ``line``, stamped ``at``, and its code."""
        violation = SizeViolationRow.for_payload(
            line, self.limits.max_bad_row_bytes, expectation, iso_stamp(at), self._processor
        )
        return violation.to_json(self._processor), str(violation.code)


def encoded_row_size(row: TransformedRow) -> int:
    """Return the bytes ``row`` takes in an insertAll request (as the size check counts)."""
    return len(orjson.dumps(row.data)) + len(row.event_id.encode()) + _ROW_OVERHEAD


def iso_stamp(moment: datetime) -> str:
    """Return ``moment`` as a bad row's timestamp (UTC, milliseconds, ``Z``)."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
