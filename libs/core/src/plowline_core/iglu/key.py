"""Iglu schema coordinates: SchemaVer, SchemaKey and SchemaCriterion.

Notes:
    Pure and hashable. ``SchemaKey.parse`` is cached because the same few URIs
    appear in millions of events.
    ``parse`` holds a URI to Iglu's patterns (vendor ``[a-zA-Z0-9-_.]+``, name and format
    ``[a-zA-Z0-9-_]+``, a full SchemaVer), and refuses a vendor of dots only: Iglu's
    pattern admits ``.`` and ``..``, which name no reverse-domain vendor and, as the first
    segment of a registry path (``schemas/../name/…``), would climb out of a registry's
    ``schemas/``: a hostile event must not choose the path fetched. The constructor, which Snowplow's column-name vectors call
    with names such as ``a.b.c``, checks only that each part is one plain path segment.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

_URI = re.compile(
    r"^iglu:([a-zA-Z0-9\-_.]+)/([a-zA-Z0-9\-_]+)/([a-zA-Z0-9\-_]+)/([1-9][0-9]*|0)-(0|[1-9][0-9]*)-(0|[1-9][0-9]*)$"
)
# A part a registry path can carry as one segment: not dots only, no separator, no
# percent-escape, no control character. ``fullmatch``.
_SEGMENT = re.compile(r"(?!\.+\Z)[^/\\%?#\x00-\x1f\x7f]+")
_VER = re.compile(r"^([1-9][0-9]*|0)-(0|[1-9][0-9]*)-(0|[1-9][0-9]*)$")
_CRITERION = re.compile(
    r"^iglu:([a-zA-Z0-9\-_.]+)/([a-zA-Z0-9\-_]+)/([a-zA-Z0-9\-_]+)/([1-9][0-9]*|0|\*)-(0|[1-9][0-9]*|\*)-(0|[1-9][0-9]*|\*)$"
)


@dataclass(frozen=True, slots=True, order=True)
class SchemaVer:
    """A full SchemaVer ``MODEL-REVISION-ADDITION``."""

    model: int
    revision: int
    addition: int

    @classmethod
    def parse(cls, text: str) -> SchemaVer:
        """Parse ``1-0-2``; raise ValueError naming the text otherwise."""
        match = _VER.match(text)
        if match is None:
            raise ValueError(
                f"invalid SchemaVer {text!r}: expected MODEL-REVISION-ADDITION, e.g. 1-0-0"
            )
        return cls(int(match[1]), int(match[2]), int(match[3]))

    def __str__(self) -> str:
        return f"{self.model}-{self.revision}-{self.addition}"


@dataclass(frozen=True, slots=True, order=True)
class SchemaKey:
    """The coordinates of one schema: ``iglu:vendor/name/format/M-R-A``."""

    vendor: str
    name: str
    format: str
    version: SchemaVer

    def __post_init__(self) -> None:
        """Refuse a part that is not one plain path segment (``..``, ``a/b``, ``%2e``…)."""
        parts = (self.vendor, self.name, self.format)
        if not (
            all(isinstance(part, str) and _SEGMENT.fullmatch(part) for part in parts)
            and isinstance(self.version, SchemaVer)
        ):
            raise ValueError(
                f"invalid schema key {self.vendor!r}/{self.name!r}/{self.format!r}/"
                f"{self.version!r}: each part must be one plain path segment (not dots "
                "only such as '..', no '/', '%', '?', '#' or control character)"
            )

    @staticmethod
    def parse(uri: str) -> SchemaKey:
        """Parse an ``iglu:`` URI; raise ValueError naming the URI otherwise."""
        return _parse_key(uri)

    def to_uri(self) -> str:
        """Return ``iglu:vendor/name/format/M-R-A``."""
        return f"iglu:{self.vendor}/{self.name}/{self.format}/{self.version}"

    def to_path(self) -> str:
        """Return the registry path ``vendor/name/format/M-R-A``."""
        return f"{self.vendor}/{self.name}/{self.format}/{self.version}"

    def __str__(self) -> str:
        return self.to_uri()


@lru_cache(maxsize=4096)
def _parse_key(uri: str) -> SchemaKey:
    match = _URI.match(uri) if isinstance(uri, str) else None
    if match is None:
        raise ValueError(
            f"invalid schema URI {uri!r}: expected iglu:vendor/name/format/MODEL-REVISION-ADDITION"
        )
    version = SchemaVer(int(match[4]), int(match[5]), int(match[6]))
    if not match[1].strip("."):
        raise ValueError(
            f"invalid schema URI {uri!r}: the vendor is dots only (a vendor is a reverse "
            "domain name such as com.acme)"
        )
    return SchemaKey(match[1], match[2], match[3], version)


@dataclass(frozen=True, slots=True)
class SchemaCriterion:
    """A pattern over schema keys, e.g. ``iglu:com.acme/ctx/jsonschema/1-*-*``.

    ``None`` in a version slot means ``*`` (any).
    """

    vendor: str
    name: str
    format: str
    model: int | None
    revision: int | None = None
    addition: int | None = None

    @classmethod
    def parse(cls, text: str) -> SchemaCriterion:
        """Parse a criterion URI; raise ValueError naming the text otherwise."""
        match = _CRITERION.match(text)
        if match is None:
            raise ValueError(
                f"invalid schema criterion {text!r}: expected iglu:vendor/name/format/M-R-A with * allowed"
            )

        def slot(value: str) -> int | None:
            return None if value == "*" else int(value)

        return cls(match[1], match[2], match[3], slot(match[4]), slot(match[5]), slot(match[6]))

    def matches(self, key: SchemaKey) -> bool:
        """Return True when the key falls under this criterion."""
        version = key.version
        return (
            key.vendor == self.vendor
            and key.name == self.name
            and key.format == self.format
            and (self.model is None or self.model == version.model)
            and (self.revision is None or self.revision == version.revision)
            and (self.addition is None or self.addition == version.addition)
        )

    def __str__(self) -> str:
        def slot(value: int | None) -> str:
            return "*" if value is None else str(value)

        return (
            f"iglu:{self.vendor}/{self.name}/{self.format}/"
            f"{slot(self.model)}-{slot(self.revision)}-{slot(self.addition)}"
        )
