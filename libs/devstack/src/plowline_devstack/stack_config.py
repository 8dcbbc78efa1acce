"""What the local stack holds (topics, subscriptions, dataset, events table, buckets) and creating it.

The provisioning file is JSON (``*.json``) or TOML (``*.toml``), one flat object; every
key is optional and falls back to the default shown::

    {
      "project": "plowline-local",
      "dataset": "snowplow",
      "table": "events",
      "topics": ["enriched", "types", "bad-rows", "failed-inserts"],
      "subscriptions": {
        "enriched-loader": "enriched",
        "types-mutator": "types",
        "bad-rows-deadletter": "bad-rows",
        "failed-inserts-repeater": "failed-inserts"
      },
      "buckets": ["plowline-dead-end", "plowline-bad-rows"]
    }

``subscriptions`` maps a subscription name to its topic. The events table gets the
atomic columns (``plowline_core.event.fields.ATOMIC_COLUMNS``, ``load_tstamp`` included).

Notes:
    Provisioning is idempotent: what exists is left as it is, so ``plowline dev up`` may
    run it again on a running stack.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from plowline_core.errors import ConfigError

_TOPICS = ("enriched", "types", "bad-rows", "failed-inserts")
_SUBSCRIPTIONS = {
    "enriched-loader": "enriched",
    "types-mutator": "types",
    "bad-rows-deadletter": "bad-rows",
    "failed-inserts-repeater": "failed-inserts",
}
_BUCKETS = ("plowline-dead-end", "plowline-bad-rows")


@dataclass(frozen=True, slots=True)
class StackConfig:
    """The resources of one local stack."""

    project: str = "plowline-local"
    dataset: str = "snowplow"
    table: str = "events"
    topics: tuple[str, ...] = _TOPICS
    subscriptions: Mapping[str, str] = field(default_factory=lambda: dict(_SUBSCRIPTIONS))
    buckets: tuple[str, ...] = _BUCKETS

    def to_json(self) -> dict[str, Any]:
        """Return the config in the provisioning file's JSON form."""
        out = asdict(self)
        out["subscriptions"] = dict(self.subscriptions)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StackConfig:
        """Build a config from the provisioning file's form; unknown keys are a ConfigError."""
        unknown = set(data) - {"project", "dataset", "table", "topics", "subscriptions", "buckets"}
        if unknown:
            raise ConfigError(f"unknown provisioning keys: {sorted(unknown)}")
        defaults = cls()
        config = cls(
            project=str(data.get("project", defaults.project)),
            dataset=str(data.get("dataset", defaults.dataset)),
            table=str(data.get("table", defaults.table)),
            topics=tuple(str(t) for t in data.get("topics", defaults.topics)),
            subscriptions={
                str(k): str(v)
                for k, v in dict(data.get("subscriptions", defaults.subscriptions)).items()
            },
            buckets=tuple(str(b) for b in data.get("buckets", defaults.buckets)),
        )
        orphans = set(config.subscriptions.values()) - set(config.topics)
        if orphans:
            raise ConfigError(
                f"subscriptions name topics that are not provisioned: {sorted(orphans)}"
            )
        return config


def load_config(path: Path | None) -> StackConfig:
    """Read a provisioning file (JSON or TOML by suffix); None gives the defaults."""
    if path is None:
        return StackConfig()
    try:
        text = path.read_text()
        data = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read provisioning file {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"provisioning file {path} must hold one object")
    return StackConfig.from_json(data)
