"""2.x's check of the atomic money fields: each must fit NUMERIC(18, 2).

Loader 2.x types the eight money fields of the atomic event as ``Decimal(Digits18, 2)`` (its
table makes them NUMERIC) and casts them like any decimal: a value with more than 2 decimal
places, or more than 16 digits before the point, is a ``WrongType`` against the atomic schema
(``iglu:com.snowplowanalytics.snowplow/atomic/jsonschema/1-0-0``), and the event a
``loader_iglu_error`` bad row. Trailing zeros do not count (``87.90000`` fits).

Notes:
    Pure. Applied in ``major`` column mode only; 1.x wrote FLOAT columns and checked nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from plowline_core.event import fields as event_fields
from plowline_core.event.fields import ENRICHED_FIELDS

MONEY_FIELDS = tuple(f.name for f in ENRICHED_FIELDS if f.name in event_fields.MONEY_FIELDS)
"""The eight money fields, in TSV order (the order their failures are listed in)."""
ATOMIC_SCHEMA = "iglu:com.snowplowanalytics.snowplow/atomic/jsonschema/1-0-0"
EXPECTED = "Decimal(Digits18,2)"
_CENT = Decimal("0.01")
_LIMIT = Decimal(10) ** 16


def money_failures(atomic: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Return one WrongType failure item per money value that does not fit NUMERIC(18, 2)."""
    failures: list[dict[str, Any]] = []
    for name in MONEY_FIELDS:
        value = atomic.get(name)
        if value is not None and not fits(value):
            failures.append({"schemaKey": ATOMIC_SCHEMA, "value": value, "expected": EXPECTED})
    return failures


def fits(value: Any) -> bool:
    """Say whether a number has at most 2 decimal places and 16 digits before the point."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        number = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    except InvalidOperation:
        return False
    if not number.is_finite() or abs(number) >= _LIMIT:
        return False
    return number == number.quantize(_CENT)
