"""Build registries and a resolver from a resolver config (a file, or base64 of JSON or HOCON)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import structlog
from plowline_core.errors import ConfigError
from plowline_core.iglu.config import EmbeddedConnection, ResolverConfig
from plowline_core.iglu.outage import OutageLedger
from plowline_core.iglu.resolver import Resolver
from plowline_core.ports import Clock, OutageListener, Registry

from plowline_cloud.config_source import load_document
from plowline_cloud.iglu.embedded import EmbeddedRegistry
from plowline_cloud.iglu.remote import HttpRegistry

_log = structlog.get_logger("plowline.iglu")

NOT_FOUND_HELP = (
    "HTTP statuses that mean 'this registry does not have the schema', per repository of the "
    "resolver config: 'NAME=403,404;OTHER=404' (404 always does). Default: 403 and 404 for a "
    "repository without apikey (static buckets answer 403 for a missing file), 404 only with "
    "an apikey (there a 403 means the key is wrong). Any other failure holds events back."
)


def registries_from_config(config: ResolverConfig, base_dir: Path) -> dict[str, Registry]:
    """Build one registry per repository, keyed by name.

    Notes:
        A relative embedded path is resolved against ``base_dir`` (the resolver file's
        directory), never against the working directory. A repository over plain http is
        logged as a warning: schemas decide casting and DDL, and anyone on the path can
        change them (or read the apikey).
    """
    registries: dict[str, Registry] = {}
    for ref in config.repositories:
        connection = ref.connection
        if isinstance(connection, EmbeddedConnection):
            path = (base_dir / connection.path).resolve()
            registries[ref.name] = EmbeddedRegistry(ref.name, path)
        else:
            if not connection.uri.lower().startswith("https://"):
                _log.warning(
                    "iglu registry over plain http: use https",
                    registry=ref.name,
                    uri=connection.uri,
                    sends_apikey=bool(connection.apikey),
                )
            registries[ref.name] = HttpRegistry(
                ref.name,
                connection.uri,
                connection.apikey,
                not_found=connection.not_found_statuses(),
            )
    return registries


def load_resolver(
    value: str | Path,
    clock: Clock,
    not_found: Mapping[str, frozenset[int]] | None = None,
    listener: OutageListener | None = None,
    flag: str = "--resolver",
) -> Resolver:
    """Read a resolver config (a path, or base64 of JSON or HOCON) and return a ready Resolver.

    ``not_found``: per-repository statuses meaning "not found" (``parse_not_found``);
    ``listener``: told when a repository's outage starts and ends.

    Raises:
        ConfigError: unreadable, unparsable or invalid; the message starts with ``flag``.
    """
    document, source = load_document(value, flag)
    try:
        config = ResolverConfig.parse(document).with_not_found(not_found or {})
        registries = registries_from_config(config, source.base_dir)
        return Resolver.from_config(config, registries, clock, OutageLedger(listener))
    except ConfigError as error:
        raise ConfigError(f"{flag} {source.origin}: {error}") from error
