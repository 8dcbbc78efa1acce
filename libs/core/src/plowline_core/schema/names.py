"""BigQuery names: nested field names and entity column names.

Two different Snowplow rules live here, and they are not interchangeable:

- the *field* rule (schema-ddl ``Field.normalName`` / parquet ``normalizeName``) snake-cases
  acronyms (``HTTPHeader`` → ``http_header``) and prefixes ``_`` when the name does not
  start with a letter or ``_``;
- the *column* rule (BigQuery Loader ``getColumnName`` and the analytics SDK
  ``transformSchema``) only splits lower/digit→Upper (``HTTPHeader`` → ``httpheader``).

Notes:
    Pure and cached: the loader calls both per entity of every event.
    Regexes are ASCII-only on purpose: Java's ``\\d`` and ``[A-Z]`` are ASCII, Python's
    ``\\d`` is not.
"""

from __future__ import annotations

import re
from functools import lru_cache

from plowline_core.iglu.key import SchemaKey
from plowline_core.schema.entity import ColumnMode, ShredProperty

_ACRONYM = re.compile(r"([A-Z]+)([A-Z][a-z])", re.ASCII)
_LOWER_UPPER = re.compile(r"([a-z0-9])([A-Z])", re.ASCII)
_DISALLOWED = re.compile(r"[^A-Za-z0-9_]", re.ASCII)
_LEGAL_START = re.compile(r"[A-Za-z_]", re.ASCII)
_VALID_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*", re.ASCII)
_VENDOR_SEP = re.compile(r"[.\-]")
_COLUMN_CAMEL = re.compile(r"([^A-Z_])([A-Z])", re.ASCII)

_PREFIX = {
    ShredProperty.UNSTRUCT_EVENT: "unstruct_event",
    ShredProperty.CONTEXTS: "contexts",
    ShredProperty.DERIVED_CONTEXTS: "contexts",
}

#: BigQuery's limit on a column name's length.
MAX_NAME_LENGTH = 300


@lru_cache(maxsize=65536)
def normalize_field_name(name: str) -> str:
    """Return the BigQuery sub-field name of a JSON property (schema-ddl field rule).

    Notes:
        snakeCase (``([A-Z]+)([A-Z][a-z])``→``$1_$2``, ``([a-z\\d])([A-Z])``→``$1_$2``,
        ``-``→``_``, lower), then ``[^A-Za-z0-9_]``→``_``, then ``_`` prefix unless the
        first character is a letter or ``_``. ``""`` stays ``""`` (vector e9).
        Idempotent: normalising a normalised name returns it unchanged.
    """
    snake = _LOWER_UPPER.sub(r"\1_\2", _ACRONYM.sub(r"\1_\2", name)).replace("-", "_").lower()
    cleaned = _DISALLOWED.sub("_", snake)
    if cleaned and _LEGAL_START.match(cleaned) is None:
        return f"_{cleaned}"
    return cleaned


def is_valid_name(name: str) -> bool:
    """Return True when ``name`` is a legal BigQuery column or field name."""
    return len(name) <= MAX_NAME_LENGTH and _VALID_NAME.fullmatch(name) is not None


@lru_cache(maxsize=16384)
def column_name(key: SchemaKey, shred: ShredProperty, mode: ColumnMode = ColumnMode.FULL) -> str:
    """Return the entity column of a schema: ``<prefix>_<vendor>_<name>_<M>[_<R>_<A>]``.

    Notes:
        Derived contexts share the ``contexts_`` prefix (upstream vectors).
        vendor: ``[.-]``→``_`` then lower; name: ``[.-]``→``_``, ``([^A-Z_])([A-Z])``→``$1_$2``,
        lower. ``full`` keeps the whole SchemaVer (v1), ``major`` only the model (v2).
    """
    vendor = _VENDOR_SEP.sub("_", key.vendor).lower()
    name = _COLUMN_CAMEL.sub(r"\1_\2", _VENDOR_SEP.sub("_", key.name)).lower()
    version = key.version
    if mode is ColumnMode.MAJOR:
        suffix = f"{version.model}"
    else:
        suffix = f"{version.model}_{version.revision}_{version.addition}"
    return f"{_PREFIX[shred]}_{vendor}_{name}_{suffix}"


def java_order(name: str) -> bytes:
    """Return a sort key that orders names as Java's ``String.compareTo`` (UTF-16 code units)."""
    return name.encode("utf-16-be", "surrogatepass")
