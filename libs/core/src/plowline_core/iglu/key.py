"""Iglu schema coordinates: SchemaVer, SchemaKey and SchemaCriterion.

Notes:
    Pure and hashable. ``SchemaKey.parse`` is cached because the same few URIs
    appear in millions of events.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

_URI = re.compile(
    r"^iglu:([a-zA-Z0-9\-_.]+)/([a-zA-Z0-9\-_]+)/([a-zA-Z0-9\-_]+)/([1-9][0-9]*|0)-(0|[1-9][0-9]*)-(0|[1-9][0-9]*)$"
)
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
