"""The Iglu resolver configuration (``iglu:com.snowplowanalytics.iglu/resolver-config/…``).

Accepted versions and what each adds (as in Iglu Central):

- 1-0-0: ``cacheSize`` (integer ≥ 0), repositories with ``embedded.path`` or ``http.uri``
- 1-0-1: ``http.apikey``
- 1-0-2: ``cacheTtl`` (integer ≥ 1 or null, seconds); ``cacheSize`` and ``priority`` any number
- 1-0-3: ``cacheTtl`` may be 0

Which HTTP statuses mean "this registry does not have the schema" (``not_found``) is a
plowline setting, not a field of the file: Iglu Central's resolver-config schemas forbid
additional properties at every level, so an extra field would make the same file invalid
for Snowplow's enrich, which usually shares it. 404 always means not found. By default a
repository WITHOUT an apikey (a static registry: a bucket or a web server) takes 403 as
not found too, since S3 answers 403 for a missing key unless the reader may list the
bucket (and static GCS buckets can do the same); a repository WITH an apikey (Iglu Server)
takes 403 as a wrong key, an outage. ``parse_not_found`` reads the per-repository override
(``NAME=403,404;OTHER=404``) and ``ResolverConfig.with_not_found`` applies it. Snowplow's
own resolver takes every non-2xx answer as not found, 5xx included; plowline does not,
so that a registry outage holds events back instead of turning them into bad rows.

Notes:
    Pure: embedded paths are kept as written; the adapter that opens them resolves a relative
    path against the directory of the resolver file. The schemas below mirror Iglu Central's,
    written so that errors name the key (``connection`` must have exactly one of ``embedded``
    or ``http`` instead of an opaque ``oneOf``) and with an ``http(s)://`` pattern for ``uri``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from plowline_core.errors import ConfigError
from plowline_core.iglu.key import SchemaKey, SchemaVer
from plowline_core.iglu.validation import check_self_describing

RESOLVER_CONFIG_VENDOR = "com.snowplowanalytics.iglu"
RESOLVER_CONFIG_NAME = "resolver-config"
NOT_FOUND = 404
FORBIDDEN = 403
_RETRY_STATUSES = frozenset({408, 429})  # "try again later": never a "not found"


@dataclass(frozen=True, slots=True)
class HttpConnection:
    """An Iglu Server or static HTTP registry; ``uri`` ends before ``/schemas``."""

    uri: str
    apikey: str | None = None
    not_found: frozenset[int] | None = None  # None: the default (see the module docstring)

    def __repr__(self) -> str:
        # Keep the apikey out of logs and tracebacks.
        hidden = None if self.apikey is None else "***"
        return f"HttpConnection(uri={self.uri!r}, apikey={hidden!r})"

    def not_found_statuses(self) -> frozenset[int]:
        """Return the statuses that mean "not here": 404, and 403 when there is no apikey."""
        if self.not_found is not None:
            return self.not_found | {NOT_FOUND}
        if self.apikey:
            return frozenset({NOT_FOUND})
        return frozenset({NOT_FOUND, FORBIDDEN})


@dataclass(frozen=True, slots=True)
class EmbeddedConnection:
    """A directory holding ``schemas/vendor/name/format/M-R-A`` (relative to the resolver file)."""

    path: str


Connection = HttpConnection | EmbeddedConnection


@dataclass(frozen=True, slots=True)
class RepositoryRef:
    """One repository of the resolver config.

    Notes:
        ``priority``: lower is looked up first (after vendor-prefix and embedded-first rules).
    """

    name: str
    priority: float
    vendor_prefixes: tuple[str, ...]
    connection: Connection

    def matches_vendor(self, vendor: str) -> bool:
        """Return True when one of the vendor prefixes starts the vendor (Iglu's rule)."""
        return any(vendor.startswith(prefix) for prefix in self.vendor_prefixes)


@dataclass(frozen=True, slots=True)
class ResolverConfig:
    """A parsed resolver config; ``cache_ttl`` None means cached entries never expire."""

    cache_size: int
    cache_ttl: float | None
    repositories: tuple[RepositoryRef, ...]

    @classmethod
    def parse(cls, data: Mapping[str, Any]) -> ResolverConfig:
        """Validate and parse the self-describing resolver config.

        Raises:
            ConfigError: naming the offending key path, e.g. ``data.repositories[1].connection: …``.
        """
        _, body = check_self_describing(data, _SCHEMAS)
        repositories = tuple(_repository(item) for item in body["repositories"])
        _check_unique_names(repositories)
        ttl = body.get("cacheTtl")
        return cls(
            cache_size=_cache_size(body["cacheSize"]),
            cache_ttl=None if ttl is None else float(ttl),
            repositories=repositories,
        )

    def with_not_found(self, overrides: Mapping[str, frozenset[int]]) -> ResolverConfig:
        """Return the config with the "not found" statuses of the named HTTP repositories set.

        Raises:
            ConfigError: a name that is not an HTTP repository of this config.
        """
        http = {
            ref.name: ref for ref in self.repositories if isinstance(ref.connection, HttpConnection)
        }
        unknown = sorted(set(overrides) - set(http))
        if unknown:
            raise ConfigError(
                f"not-found statuses given for {unknown}, which are not HTTP repositories "
                f"of the resolver config (its HTTP repositories: {sorted(http)})"
            )
        return replace(self, repositories=tuple(_with(ref, overrides) for ref in self.repositories))


def parse_not_found(text: str) -> dict[str, frozenset[int]]:
    """Parse ``NAME=STATUS,STATUS;NAME=STATUS`` (repository names may hold spaces).

    Raises:
        ConfigError: an entry without ``=``, a repeated name, or a status that is not a 4xx
            meaning "not found" (408 and 429 mean "try again", never "not found").
    """
    overrides: dict[str, frozenset[int]] = {}
    for entry in filter(None, (part.strip() for part in text.split(";"))):
        name, sep, statuses = entry.rpartition("=")
        name = name.strip()
        if not sep or not name:
            raise ConfigError(f"{entry!r}: expected REPOSITORY=STATUS[,STATUS], e.g. 'static=403'")
        if name in overrides:
            raise ConfigError(f"{name!r}: repository named twice")
        overrides[name] = frozenset(_status(name, item) for item in statuses.split(","))
    return overrides


def _status(name: str, item: str) -> int:
    text = item.strip()
    if not (text.isdigit() and 400 <= int(text) <= 499) or int(text) in _RETRY_STATUSES:
        raise ConfigError(
            f"{name!r}: {text!r} is not a status that can mean 'not found' (a 4xx other than "
            "408 and 429, e.g. 403 or 404)"
        )
    return int(text)


def _with(ref: RepositoryRef, overrides: Mapping[str, frozenset[int]]) -> RepositoryRef:
    statuses = overrides.get(ref.name)
    if statuses is None or not isinstance(ref.connection, HttpConnection):
        return ref
    return replace(ref, connection=replace(ref.connection, not_found=statuses | {NOT_FOUND}))


def _cache_size(value: float) -> int:
    if value < 0 or value != int(value):
        raise ConfigError(f"data.cacheSize: {value!r} is not a non-negative integer")
    return int(value)


def _check_unique_names(repositories: tuple[RepositoryRef, ...]) -> None:
    seen: set[str] = set()
    for index, repository in enumerate(repositories):
        if repository.name in seen:
            raise ConfigError(
                f"data.repositories[{index}].name: {repository.name!r} names two repositories"
            )
        seen.add(repository.name)


def _repository(item: Mapping[str, Any]) -> RepositoryRef:
    return RepositoryRef(
        name=item["name"],
        priority=item["priority"],
        vendor_prefixes=tuple(item["vendorPrefixes"]),
        connection=_connection(item["connection"]),
    )


def _connection(item: Mapping[str, Any]) -> Connection:
    if "embedded" in item:
        return EmbeddedConnection(path=item["embedded"]["path"])
    http = item["http"]
    return HttpConnection(uri=http["uri"], apikey=http.get("apikey"))


def _schema(addition: int) -> dict[str, Any]:
    """Return the JSON Schema of ``resolver-config`` 1-0-<addition>."""
    number = {"type": "number"} if addition >= 2 else {"type": "integer", "minimum": 0}
    http: dict[str, Any] = {"uri": {"type": "string", "pattern": r"^https?://[^\s/]+"}}
    if addition >= 1:
        http["apikey"] = {"type": ["string", "null"]}
    connection = {
        "type": "object",
        "properties": {
            "embedded": _closed({"path": {"type": "string", "minLength": 1}}, ["path"]),
            "http": _closed(http, ["uri"]),
        },
        "additionalProperties": False,
        "minProperties": 1,
        "maxProperties": 1,
    }
    repository = _closed(
        {
            "name": {"type": "string", "minLength": 1},
            "priority": number,
            "vendorPrefixes": {"type": "array", "items": {"type": "string"}},
            "connection": connection,
        },
        ["name", "priority", "vendorPrefixes", "connection"],
    )
    top: dict[str, Any] = {
        "cacheSize": number,
        "repositories": {"type": "array", "items": repository},
    }
    if addition >= 2:
        top["cacheTtl"] = {"type": ["integer", "null"], "minimum": 0 if addition >= 3 else 1}
    return _closed(top, ["cacheSize", "repositories"])


def _closed(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


_SCHEMAS: dict[SchemaKey, Mapping[str, Any]] = {
    SchemaKey(
        RESOLVER_CONFIG_VENDOR, RESOLVER_CONFIG_NAME, "jsonschema", SchemaVer(1, 0, a)
    ): _schema(a)
    for a in range(4)
}
