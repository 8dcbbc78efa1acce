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
      "buckets": ["plowline-dead-end", "plowline-bad-rows"],
      "table_layout": "1.x"
    }

``subscriptions`` maps a subscription name to its topic. The events table gets the
atomic columns (``plowline_core.event.fields.ATOMIC_COLUMNS``, ``load_tstamp`` included);
``"table_layout": "2.x"`` makes it the table loader 2.x creates (``V2_ATOMIC_COLUMNS``,
DAY-partitioned on ``load_tstamp``, clustered by ``event_name``).

A Snowplow config (0.x ``bigquery_config`` JSON, or 1.x HOCON; a path or base64) is read
too: its project, dataset, table, topics and subscriptions are provisioned, plus the
``enriched`` topic its input subscription reads, the repeater's subscription
(1.x ``repeater.input.subscription``, else ``<failedInserts>-repeater``), the dead-letter
writer's (``<badRows>-deadletter``) and the dead-end bucket (1.x ``deadLetters.bucket``).
A 2.x config's derived names (``plowline_core.v2_names``, ``PLOWLINE_V2_*`` applied) are
provisioned as they are, with 2.x's table. The local stack has one project: a config
naming Pub/Sub resources in another project than the table's is refused.

Notes:
    Provisioning is idempotent: what exists is left as it is, so ``plowline dev up`` may
    run it again on a running stack.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from plowline_cloud.config_source import load_document, load_pipeline_config
from plowline_core.errors import ConfigError
from plowline_core.pipeline_config import PipelineConfig

_TOPICS = ("enriched", "types", "bad-rows", "failed-inserts")
_SUBSCRIPTIONS = {
    "enriched-loader": "enriched",
    "types-mutator": "types",
    "bad-rows-deadletter": "bad-rows",
    "failed-inserts-repeater": "failed-inserts",
}
_BUCKETS = ("plowline-dead-end", "plowline-bad-rows")
_ENRICHED = "enriched"  # a Snowplow config names the input subscription only, not its topic
_PROVISIONING_KEYS = frozenset(
    {"project", "dataset", "table", "topics", "subscriptions", "buckets", "table_layout"}
)
_TABLE_LAYOUTS = ("1.x", "2.x")


@dataclass(frozen=True, slots=True)
class StackConfig:
    """The resources of one local stack."""

    project: str = "plowline-local"
    dataset: str = "snowplow"
    table: str = "events"
    topics: tuple[str, ...] = _TOPICS
    subscriptions: Mapping[str, str] = field(default_factory=lambda: dict(_SUBSCRIPTIONS))
    buckets: tuple[str, ...] = _BUCKETS
    table_layout: str = "1.x"

    def to_json(self) -> dict[str, Any]:
        """Return the config in the provisioning file's JSON form."""
        out = asdict(self)
        out["subscriptions"] = dict(self.subscriptions)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StackConfig:
        """Build a config from the provisioning file's form; unknown keys are a ConfigError."""
        unknown = set(data) - _PROVISIONING_KEYS
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
            table_layout=str(data.get("table_layout", defaults.table_layout)),
        )
        if config.table_layout not in _TABLE_LAYOUTS:
            raise ConfigError(
                f"table_layout: {config.table_layout!r} is not one of {_TABLE_LAYOUTS}"
            )
        orphans = set(config.subscriptions.values()) - set(config.topics)
        if orphans:
            raise ConfigError(
                f"subscriptions name topics that are not provisioned: {sorted(orphans)}"
            )
        return config


def load_config(path: str | Path | None) -> StackConfig:
    """Read a provisioning file or a Snowplow config (see the module doc); None: the defaults."""
    return load_stack(path)[0]


def load_stack(path: str | Path | None) -> tuple[StackConfig, list[str]]:
    """Return the stack ``path`` describes and, for a Snowplow config, a line per role."""
    if path is None:
        return StackConfig(), []
    if Path(path).suffix == ".toml":
        try:
            data: Any = tomllib.loads(Path(path).read_text())
        except (OSError, ValueError) as exc:
            raise ConfigError(f"cannot read provisioning file {path}: {exc}") from exc
    else:
        data, _ = load_document(path, "--config")
    if not isinstance(data, dict):
        raise ConfigError(f"provisioning file {path} must hold one object")
    if set(data) <= _PROVISIONING_KEYS:
        return StackConfig.from_json(data), []
    return stack_from_pipeline(load_pipeline_config(path, "--config"))


def stack_from_pipeline(pipeline: PipelineConfig) -> tuple[StackConfig, list[str]]:
    """Return the stack a Snowplow config names, and one line per role saying what is whose."""
    config = pipeline.bigquery
    _one_project(pipeline)
    types, bad, failed = (
        _short(t) for t in (config.types_topic, config.bad_rows, config.failed_inserts)
    )
    repeater = _short(pipeline.failed_inserts_subscription or f"{failed}-repeater")
    names = pipeline.v2_names
    deadletter = _short(names.bad_rows_subscription) if names else f"{bad}-deadletter"
    subscriptions = {
        _short(config.input): _ENRICHED,
        _short(config.types_subscription): types,
        repeater: failed,
        deadletter: bad,
    }
    dead_end = (pipeline.dead_end_bucket or "gs://plowline-dead-end").removeprefix("gs://")
    bad_rows_bucket = (names.bad_rows_bucket if names else "gs://plowline-bad-rows")[5:]
    buckets = (dead_end.split("/", 1)[0], bad_rows_bucket.split("/", 1)[0])
    stack = StackConfig(
        project=config.project_id,
        dataset=config.dataset_id,
        table=config.table_id,
        topics=tuple(dict.fromkeys((_ENRICHED, types, bad, failed))),
        subscriptions=subscriptions,
        buckets=tuple(dict.fromkeys(buckets)),
        table_layout="2.x" if pipeline.v2 is not None else "1.x",
    )
    roles = [
        f"Snowplow {pipeline.layout} config: project {stack.project}, table {config.table_ref}",
        f"enrich publishes to topic {_ENRICHED}; the loader reads subscription {_short(config.input)}",
        f"mutator listen: subscription {_short(config.types_subscription)} on topic {types}",
        f"repeater: --failedInsertsSub {repeater} (on topic {failed}), "
        f"--deadEndBucket gs://{dead_end}",
        f"dead-letter writer: --badRowsSub {deadletter} (on topic {bad}), "
        f"--bucket gs://{bad_rows_bucket}",
    ]
    return stack, roles


def _one_project(pipeline: PipelineConfig) -> None:
    """Refuse a config whose Pub/Sub names live in another project than its table.

    Raises:
        ConfigError: naming both projects (the local stack has one project).
    """
    config = pipeline.bigquery
    names = (config.input, config.types_topic, config.bad_rows, config.failed_inserts)
    others = sorted(
        {n.split("/")[1] for n in names if n.startswith("projects/")} - {config.project_id}
    )
    if others:
        raise ConfigError(
            f"the local stack has one project ({config.project_id}, the table's) but the "
            f"config names Pub/Sub resources in {others}: use one project throughout"
        )


def _short(name: str) -> str:
    """Return the short name of ``projects/P/topics/T`` (or of a short name: itself)."""
    return name.rsplit("/", 1)[-1]
