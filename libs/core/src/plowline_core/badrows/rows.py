"""The loader's bad rows: parsing, Iglu, runtime and recovery errors.

Notes:
    Frozen values; ``to_dict``/``to_json`` build the Snowplow self-describing bad row
    (``iglu:com.snowplowanalytics.snowplow.badrows/<kind>/jsonschema/<version>``) that
    validates against its schema in Iglu Central (copies in
    ``tests/data/conformance/vectors/badrows``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from plowline_core.badrows.codes import FailureCode
from plowline_core.badrows.envelope import Processor, badrow_key, dumps, self_describing
from plowline_core.event.compressed import BATCH_VERSION_PREFIX
from plowline_core.iglu.key import SchemaKey

INVALID_UTF8_PREFIX = "Invalid UTF-8"
"""Start of the ``UnhandledRowDecodingError`` message for bytes that are not UTF-8."""

_PARSING_CODES = {
    "NotTSV": FailureCode.PARSING_NOT_TSV,
    "FieldNumberMismatch": FailureCode.PARSING_FIELD_NUMBER_MISMATCH,
}


@dataclass(frozen=True, slots=True)
class ParsingErrorRow:
    """A message that is not an enriched event (``loader_parsing_error/2-0-0``).

    ``failure`` is the SDK's ParsingError JSON (``NotTSV``, ``FieldNumberMismatch`` or
    ``RowDecodingError``); ``payload`` is the raw line.
    """

    schema: ClassVar[SchemaKey] = badrow_key("loader_parsing_error", "2-0-0")

    failure: Mapping[str, Any]
    payload: str

    @property
    def code(self) -> FailureCode:
        """Return the failure code."""
        kind = self.failure.get("type")
        if kind in _PARSING_CODES:
            return _PARSING_CODES[kind]
        errors = self.failure.get("errors") or ()
        messages = [str(error.get("message", "")) for error in errors]
        if any(message.startswith(INVALID_UTF8_PREFIX) for message in messages):
            return FailureCode.PARSING_INVALID_UTF8
        if any(_is_batch_failure(message) for message in messages):
            return FailureCode.PARSING_COMPRESSED_BATCH
        return FailureCode.PARSING_ROW_DECODING

    def to_dict(self, processor: Processor) -> dict[str, Any]:
        """Return the self-describing bad row."""
        return self_describing(self.schema, processor, self.failure, self.payload)

    def to_json(self, processor: Processor) -> bytes:
        """Return the self-describing bad row as compact JSON."""
        return dumps(self.to_dict(processor))


def _is_batch_failure(message: str) -> bool:
    """Say whether ``message`` is a compressed batch's failure (``event.compressed``'s words)."""
    corrupt = message.startswith("corrupt ") and message.endswith("-compressed payload")
    return corrupt or message.startswith(BATCH_VERSION_PREFIX)


@dataclass(frozen=True, slots=True)
class IgluErrorRow:
    """A parsed event whose entities could not be resolved or cast (``loader_iglu_error/2-0-0``).

    ``failures`` are the schema's failure items (``{schemaKey, error}``, ``{schemaKey,
    message}``, ``{schemaCriterion, error}``, ``WrongType``/``NotAnArray`` ``{schemaKey,
    value, expected}``, ``MissingInValue`` ``{schemaKey, key, value}``); ``payload`` is
    ``plowline_core.event.json.event_payload(event)``.
    """

    schema: ClassVar[SchemaKey] = badrow_key("loader_iglu_error", "2-0-0")

    failures: tuple[Mapping[str, Any], ...]
    payload: Mapping[str, Any]

    @property
    def code(self) -> FailureCode:
        """Return ``iglu.cast`` when every failure is about a value, else ``iglu.resolution``."""
        if self.failures and all("value" in failure for failure in self.failures):
            return FailureCode.IGLU_CAST
        return FailureCode.IGLU_RESOLUTION

    def to_dict(self, processor: Processor) -> dict[str, Any]:
        """Return the self-describing bad row."""
        return self_describing(self.schema, processor, list(self.failures), self.payload)

    def to_json(self, processor: Processor) -> bytes:
        """Return the self-describing bad row as compact JSON."""
        return dumps(self.to_dict(processor))


@dataclass(frozen=True, slots=True)
class RuntimeErrorRow:
    """A parsed event the loader failed on unexpectedly (``loader_runtime_error/1-0-1``)."""

    schema: ClassVar[SchemaKey] = badrow_key("loader_runtime_error", "1-0-1")

    failure: str
    payload: Mapping[str, Any]

    @property
    def code(self) -> FailureCode:
        """Return the failure code."""
        return FailureCode.RUNTIME

    def to_dict(self, processor: Processor) -> dict[str, Any]:
        """Return the self-describing bad row."""
        return self_describing(self.schema, processor, self.failure, self.payload)

    def to_json(self, processor: Processor) -> bytes:
        """Return the self-describing bad row as compact JSON."""
        return dumps(self.to_dict(processor))


@dataclass(frozen=True, slots=True)
class RecoveryErrorRow:
    """A failed insert the repeater could not recover (``loader_recovery_error/1-0-0``).

    ``error`` is ``{"message", "location": [str, ...]}`` when the payload could not be read
    (ParsingError) or ``{"message", "location": str | None, "reason": str | None}`` when
    the insert kept failing (RuntimeError); ``payload`` is the failed-insert JSON text.
    """

    schema: ClassVar[SchemaKey] = badrow_key("loader_recovery_error", "1-0-0")

    error: Mapping[str, Any]
    payload: str

    @property
    def code(self) -> FailureCode:
        """Return ``recovery.runtime`` for an insert error, else ``recovery.parsing``."""
        if "reason" in self.error:
            return FailureCode.RECOVERY_RUNTIME
        return FailureCode.RECOVERY_PARSING

    def to_dict(self, processor: Processor) -> dict[str, Any]:
        """Return the self-describing bad row (``failure = {"error": error}``)."""
        return self_describing(self.schema, processor, {"error": self.error}, self.payload)

    def to_json(self, processor: Processor) -> bytes:
        """Return the self-describing bad row as compact JSON."""
        return dumps(self.to_dict(processor))
