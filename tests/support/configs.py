"""Builders of the two documents every tier writes: the Snowplow loader config and the Iglu resolver config.

``bigquery_config(...)`` is Snowplow's 0.x self-describing ``bigquery_config`` (the form
``plowline_core.config`` parses for every service); ``resolver_config(*repositories)`` an
Iglu resolver config holding ``embedded(path)`` or ``http(uri)`` repositories.
``write_json`` puts either in a file, as the services read them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

BIGQUERY_CONFIG = "iglu:com.snowplowanalytics.snowplow.storage/bigquery_config/jsonschema/1-0-0"
RESOLVER_CONFIG = "iglu:com.snowplowanalytics.iglu/resolver-config/jsonschema/1-0-{}"
CONFIG_ID = "31b1559d-d319-4023-aaae-97698238d808"
STREAMING_INSERTS = {"mode": "STREAMING_INSERTS", "retry": False}


def bigquery_config(
    *,
    name: str = "plowline test",
    project: str = "plowline-local",
    dataset: str = "snowplow",
    table: str = "events",
    input: str = "enriched-loader",
    types_topic: str = "types",
    types_subscription: str = "types-mutator",
    bad_rows: str = "bad-rows",
    failed_inserts: str = "failed-inserts",
    load: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """Return a 0.x ``bigquery_config`` (streaming inserts unless ``load`` says otherwise).

    ``extra`` adds or replaces keys of ``data`` by their Snowplow names (``purpose``, ``id``).
    """
    data: dict[str, Any] = {
        "name": name,
        "id": CONFIG_ID,
        "projectId": project,
        "datasetId": dataset,
        "tableId": table,
        "input": input,
        "typesTopic": types_topic,
        "typesSubscription": types_subscription,
        "badRows": bad_rows,
        "failedInserts": failed_inserts,
        "load": dict(STREAMING_INSERTS) if load is None else load,
        "purpose": "ENRICHED_EVENTS",
        **extra,
    }
    return {"schema": BIGQUERY_CONFIG, "data": data}


def repository(
    connection: dict[str, Any],
    name: str = "local",
    priority: int = 0,
    vendor_prefixes: tuple[str, ...] = (),
) -> dict[str, Any]:
    """Return one resolver repository reached through ``connection`` (``embedded`` or ``http``)."""
    return {
        "name": name,
        "priority": priority,
        "vendorPrefixes": list(vendor_prefixes),
        "connection": connection,
    }


def embedded(path: Path | str, name: str = "local", priority: int = 0) -> dict[str, Any]:
    """Return a resolver repository read from the folder ``path`` (holding ``schemas/``)."""
    return repository({"embedded": {"path": str(path)}}, name, priority)


def http(uri: str, name: str = "local", priority: int = 0, **connection: str) -> dict[str, Any]:
    """Return a resolver repository served at ``uri`` (``connection`` adds ``apikey``)."""
    return repository({"http": {"uri": uri, **connection}}, name, priority)


def resolver_config(
    *repositories: dict[str, Any],
    cache_size: int = 100,
    cache_ttl: int | None = 600,
    addition: int = 3,
) -> dict[str, Any]:
    """Return an Iglu resolver config (``resolver-config`` 1-0-``addition``); no ``cacheTtl`` when None."""
    data: dict[str, Any] = {"cacheSize": cache_size, "repositories": list(repositories)}
    if cache_ttl is not None:
        data["cacheTtl"] = cache_ttl
    return {"schema": RESOLVER_CONFIG.format(addition), "data": data}


def write_json(path: Path, document: dict[str, Any]) -> Path:
    """Write ``document`` as JSON at ``path`` and return the path."""
    path.write_text(json.dumps(document))
    return path


def empty_registry(root: Path) -> dict[str, Any]:
    """Return a resolver config whose one repository is an empty folder made at ``root/iglu``."""
    repository = root / "iglu"
    repository.mkdir(exist_ok=True)
    return resolver_config(embedded(repository, name="empty"), cache_size=10, cache_ttl=60)


def write_config_files(
    root: Path, config: dict[str, Any], resolver: dict[str, Any] | None = None
) -> tuple[Path, Path]:
    """Write ``root/config.json`` and ``root/resolver.json`` (default: :func:`empty_registry`)."""
    resolver = empty_registry(root) if resolver is None else resolver
    return write_json(root / "config.json", config), write_json(root / "resolver.json", resolver)
