"""Snowplow bad rows emitted by plowline, with a closed catalogue of failure codes.

``to_dict(processor)``/``to_json(processor)`` give the self-describing bad row; ``code`` is
its :class:`FailureCode`; ``parse_bad_row`` reads any self-describing message back.
"""

from __future__ import annotations

from typing import TypeAlias

from plowline_core.badrows.codes import FailureCode
from plowline_core.badrows.envelope import BADROWS_VENDOR, Processor, parse_bad_row
from plowline_core.badrows.rows import (
    INVALID_UTF8_PREFIX,
    IgluErrorRow,
    ParsingErrorRow,
    RecoveryErrorRow,
    RuntimeErrorRow,
)
from plowline_core.badrows.size import SizeViolationRow

BadRow: TypeAlias = (
    ParsingErrorRow | IgluErrorRow | RuntimeErrorRow | RecoveryErrorRow | SizeViolationRow
)
"""Any bad row plowline emits."""

__all__ = [
    "BADROWS_VENDOR",
    "INVALID_UTF8_PREFIX",
    "BadRow",
    "FailureCode",
    "IgluErrorRow",
    "ParsingErrorRow",
    "Processor",
    "RecoveryErrorRow",
    "RuntimeErrorRow",
    "SizeViolationRow",
    "parse_bad_row",
]
