"""The size-violation bad row, with its payload cut so the bad row itself fits the limit.

Notes:
    Schema ``iglu:com.snowplowanalytics.snowplow.badrows/size_violation/jsonschema/1-0-0``
    (Iglu Central). ``failure.expectation`` is at most 256 characters; sizes are bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import orjson

from plowline_core.badrows.codes import FailureCode
from plowline_core.badrows.envelope import Processor, badrow_key, dumps, self_describing
from plowline_core.iglu.key import SchemaKey

_EXPECTATION_MAX = 256
_LONGEST_ESCAPE = 6  # bytes of the longest encoded character (\u001f)
_SIZE_MAX = 1_073_741_824
# The largest processor the bad-row schemas allow (ASCII): artifact <= 512, version <= 32.
_WIDEST_PROCESSOR = Processor("a" * 512, "0" * 32)


@dataclass(frozen=True, slots=True)
class SizeViolationRow:
    """A message over the size limit (``size_violation/1-0-0``); ``timestamp`` is ISO 8601."""

    schema: ClassVar[SchemaKey] = badrow_key("size_violation", "1-0-0")

    maximum_allowed_size: int
    actual_size: int
    expectation: str
    payload: str
    timestamp: str

    @property
    def code(self) -> FailureCode:
        """Return the failure code."""
        return FailureCode.SIZE_ROW

    @classmethod
    def for_payload(
        cls,
        payload: bytes | str,
        maximum_allowed_size: int,
        expectation: str,
        timestamp: str,
        processor: Processor | None = None,
    ) -> SizeViolationRow:
        """Return the bad row for ``payload``, cut so its JSON is at most ``maximum_allowed_size`` bytes.

        Notes:
            Without ``processor`` room is kept for the widest ASCII processor the schema
            allows. When even an empty payload does not fit, the payload is empty.
            Invalid UTF-8 in ``payload`` becomes U+FFFD.
        """
        raw = payload.encode("utf-8", "surrogatepass") if isinstance(payload, str) else payload
        text = raw.decode("utf-8", "replace")
        row = cls(
            maximum_allowed_size=maximum_allowed_size,
            actual_size=len(raw),
            expectation=expectation[:_EXPECTATION_MAX],
            payload="",
            timestamp=timestamp,
        )
        overhead = len(row.to_json(processor or _WIDEST_PROCESSOR))
        kept = _longest_prefix(text, maximum_allowed_size - overhead)
        return cls(row.maximum_allowed_size, row.actual_size, row.expectation, kept, timestamp)

    def to_dict(self, processor: Processor) -> dict[str, Any]:
        """Return the self-describing bad row."""
        failure = {
            "timestamp": self.timestamp,
            "maximumAllowedSizeBytes": min(max(self.maximum_allowed_size, 0), _SIZE_MAX),
            "actualSizeBytes": min(max(self.actual_size, 0), _SIZE_MAX),
            "expectation": self.expectation[:_EXPECTATION_MAX],
        }
        return self_describing(self.schema, processor, failure, self.payload)

    def to_json(self, processor: Processor) -> bytes:
        """Return the self-describing bad row as compact JSON."""
        return dumps(self.to_dict(processor))


def _longest_prefix(text: str, budget: int) -> str:
    """Return the longest prefix of ``text`` whose JSON string body takes at most ``budget`` bytes.

    Notes:
        One encoding and one decoding, whatever the size: JSON escapes each character on
        its own, so a prefix's body is a prefix of the whole body; the longest one of at
        most ``budget`` bytes that does not cut a character or an escape (at most 6 bytes)
        decodes, and is the answer.
    """
    if budget <= 0:
        return ""
    body = dumps(text)[1:-1]
    if len(body) <= budget:
        return text
    for end in range(budget, max(budget - _LONGEST_ESCAPE, 0), -1):
        try:
            prefix: str = orjson.loads(b'"' + body[:end] + b'"')
        except orjson.JSONDecodeError:
            continue  # the cut splits a character or an escape
        return prefix
    return ""
