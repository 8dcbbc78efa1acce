"""Decode one atomic TSV value the way Snowplow's Scala analytics SDK (3.x) does.

Each ``decode_*`` returns the BigQuery-JSON value or raises ``ValueError`` when the SDK
would reject the text; the parser turns that into an ``InvalidValue`` with the SDK's message.

Notes:
    Pure. Every decoder has a fast path for the shapes enrich writes and falls back to a
    slower, exact model of the JVM rule (``Integer.parseInt``, ``Double.parseDouble``,
    ``UUID.fromString`` of JDK 17, ``Instant.parse`` of ``value.replace(" ", "T") + "Z"``).
"""

from __future__ import annotations

import re
from datetime import datetime

_INT_MIN = -(2**31)
_INT_MAX = 2**31 - 1
_LONG_MIN = -(2**63)
_LONG_MAX = 2**63 - 1

BOOLEANS: dict[str, bool] = {"1": True, "0": False}
"""The only accepted boolean texts (SDK: ``"1"``/``"0"``)."""

_JAVA_SPACE = "".join(chr(code) for code in range(33))  # String.trim strips chars <= ' '
_JAVA_DOUBLE = re.compile(
    r"[+-]?(?:NaN|Infinity"
    r"|(?P<dec>(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)[fFdD]?"
    r"|(?P<hex>0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+)[fFdD]?)"
)
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")
_UUID_CHARS = _HEX_DIGITS | {"-"}
_UUID_MASKS = (0xFFFFFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFFFFFFFFFF)
_INSTANT = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]{0,9}))?Z",
    re.ASCII,
)
# Characters at offsets 4, 7, 10, 13, 16 (and 19) of a timestamp enrich writes.
_SEPARATORS = frozenset({"-- ::", "--T::", "-- ::.", "--T::."})
_from_iso = datetime.fromisoformat
_DAYS_IN_MONTH = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)

# Shapes of the texts enrich writes. A text of its kind's shape that ``int``, ``float``,
# ``"1".__eq__``, ``str.lower`` or ``iso_timestamps`` accepts (``int``/``float`` may still raise
# ValueError on e.g. "1-2") is decoded by it exactly as by the decoders above, and its value is
# always in range; other texts, even ones the JVM accepts, are for the decoders above.
INT_SHAPE = r"[0-9+\-]{1,9}"
"""An int32 for ``int()``: nine characters at most, so always in range."""

DOUBLE_SHAPE = r"[0-9.+\-]{1,200}(?:[eE](?:\+?[0-9]{1,2}|-[0-9]{1,3}))?"
"""A decimal double for ``float()``: at most 200 digits, exponent at most 99, so finite."""

BOOLEAN_SHAPE = r"[01]"
"""A boolean."""

UUID_SHAPE = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
"""A canonical UUID: its decoded form is ``text.lower()``."""

_LEAP_YEAR = r"(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)"
_MONTH_DAY = (
    r"(?:(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8])"
    r"|(?:0[13-9]|1[0-2])-(?:29|30)"
    r"|(?:0[13578]|1[02])-31)"
)
TIMESTAMP_SHAPE = (
    rf"(?:[0-9]{{4}}-{_MONTH_DAY}|{_LEAP_YEAR}-02-29)"
    r" (?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]{3})?"
)
"""A valid calendar timestamp with milliseconds or none (no 24:00, no leap second)."""


def iso_timestamps(texts: tuple[str, ...]) -> list[str]:
    """Return ``decode_timestamp`` of each ``TIMESTAMP_SHAPE`` text (``Z`` alone for "").

    Notes:
        Works on the joined texts so the whole conversion runs in C: ``T`` for the space,
        ``.000`` dropped (``Instant.toString`` prints no zero fraction), ``Z`` appended.
    """
    joined = "\t".join(texts) + "\t"
    return joined.replace(" ", "T").replace(".000\t", "\t").replace("\t", "Z\t").split("\t")


def decode_int(text: str) -> int:
    """Return the int32 in ``text`` (Java ``Integer.parseInt``); raise ValueError otherwise."""
    if text.isdigit() or (text[:1] in ("+", "-") and text[1:].isdigit()):
        number = int(text)  # isdigit admits e.g. "²", which int() rejects: still a ValueError
        if _INT_MIN <= number <= _INT_MAX:
            return number
    raise ValueError(text)


def decode_double(text: str) -> float | None:
    """Return the double in ``text`` (Java ``Double.parseDouble``), None when not finite.

    Notes:
        The SDK accepts ``NaN``/``Infinity`` and its JSON encoder writes them as null,
        so a non-finite value is a NULL column, not an error.
    """
    try:
        value = float(text)
    except ValueError:
        return _java_double(text)
    if value - value == 0.0 and text.isascii() and "_" not in text:
        return value
    return _java_double(text)


def _java_double(text: str) -> float | None:
    match = _JAVA_DOUBLE.fullmatch(text.strip(_JAVA_SPACE))
    if match is None:
        raise ValueError(text)
    negative = match[0].startswith("-")
    try:
        if match["dec"] is not None:
            value = float(match["dec"])
        elif match["hex"] is not None:
            value = float.fromhex(match["hex"])
        else:
            return None
    except OverflowError:  # float.fromhex overflows where Java returns Infinity
        return None
    if value - value != 0.0:
        return None
    return -value if negative else value


def decode_uuid(text: str) -> str:
    """Return the canonical lower-case form of the UUID in ``text`` (JDK 17 ``UUID.fromString``)."""
    if (
        len(text) == 36
        and text[8] == "-"
        and text[13] == "-"
        and text[18] == "-"
        and text[23] == "-"
        and _UUID_CHARS.issuperset(text)
        and text.count("-") == 4
    ):
        return text.lower()
    return _java_uuid(text)


def _java_uuid(text: str) -> str:
    # JDK 17's lenient path: five dash-separated signed hex longs, each masked to its width.
    if len(text) > 36:
        raise ValueError(text)
    parts = text.split("-")
    if len(parts) != 5:
        raise ValueError(text)
    numbers = [_java_hex_long(part) & mask for part, mask in zip(parts, _UUID_MASKS, strict=True)]
    return "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}".format(*numbers)


def _java_hex_long(part: str) -> int:
    digits = part[1:] if part[:1] in ("+", "-") else part
    if not digits or not _HEX_DIGITS.issuperset(digits):
        raise ValueError(part)
    number = int(part, 16)
    if not _LONG_MIN <= number <= _LONG_MAX:
        raise ValueError(part)
    return number


def decode_timestamp(text: str) -> str:
    """Return ``text`` (``2013-11-26 00:02:05.292``) as ``Instant.toString`` prints it."""
    size = len(text)
    if text[4:20:3] in _SEPARATORS and size < 30 and (size == 19 or text[20:].isdigit()):
        try:
            _from_iso(text)  # checks digits and calendar ranges in C
        except ValueError:
            return _java_instant(text)
        if size == 19 or (size == 23 and text[20:] != "000"):
            return f"{text[:10]}T{text[11:]}Z"
        return f"{text[:10]}T{text[11:19]}{_fraction(text[20:])}Z"
    return _java_instant(text)


def _fraction(digits: str) -> str:
    # Instant.toString prints nanos in groups of three digits: 3, 6 or 9 of them, or none.
    padded = digits.ljust(9, "0")
    if padded[3:] == "000000":
        return "" if padded[:3] == "000" else f".{padded[:3]}"
    if padded[6:] == "000":
        return f".{padded[:6]}"
    return f".{padded}"


def _java_instant(text: str) -> str:
    match = _INSTANT.fullmatch(text.replace(" ", "T") + "Z")
    if match is None:
        raise ValueError(text)
    year, month, day, hour, minute, second = (int(match[i]) for i in range(1, 7))
    fraction = match[7] or ""
    if not (1 <= month <= 12 and 1 <= day <= _days_in_month(year, month) and minute <= 59):
        raise ValueError(text)
    if hour == 24 and minute == 0 and second == 0 and fraction.strip("0") == "":
        return _next_day(year, month, day) + "T00:00:00Z"
    if hour == 23 and minute == 59 and second == 60:
        second = 59  # ISO_INSTANT folds a leap second into the last second of the day
    if hour > 23 or second > 59:
        raise ValueError(text)
    return (
        f"{year:04d}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}"
        f"{_fraction(fraction)}Z"
    )


def _days_in_month(year: int, month: int) -> int:
    if month == 2 and year % 4 == 0 and (year % 100 != 0 or year % 400 == 0):
        return 29
    return _DAYS_IN_MONTH[month - 1]


def _next_day(year: int, month: int, day: int) -> str:
    if day < _days_in_month(year, month):
        return f"{year:04d}-{month:02d}-{day + 1:02d}"
    if month < 12:
        return f"{year:04d}-{month + 1:02d}-01"
    return f"+{year + 1}-01-01" if year == 9999 else f"{year + 1:04d}-01-01"


def java_length(text: str) -> int:
    """Return ``String.length()`` of ``text`` in Java (UTF-16 code units)."""
    if text.isascii():
        return len(text)
    return len(text) + sum(1 for char in text if char > "\uffff")
