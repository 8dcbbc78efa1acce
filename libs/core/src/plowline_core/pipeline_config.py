"""Any Snowplow BigQuery Loader config, 0.x, 1.x or 2.x, as the one ``PipelineConfig`` the services read.

Three layouts name the same pipeline:

- 0.x: the self-describing ``bigquery_config`` JSON (``BigQueryConfig.parse``);
- 1.x: one HOCON tree for every app (``projectId``, ``loader.input.subscription``,
  ``loader.output.{good,bad,types,failedInserts}``, ``mutator.{input,output}``,
  ``repeater.{input,output}``), substitutions already resolved by the caller;
- 2.x: one HOCON tree for its one app (``input.subscription``, ``output.good``,
  ``output.bad.topic`` …; ``plowline_core.v2_config``). What plowline needs and 2.x has
  no key for is derived (``plowline_core.v2_names``); the table is written with the
  Storage Write API (default stream), as 2.x writes it.

``PipelineConfig.from_document`` tells them apart by shape and maps the 1.x names onto
``BigQueryConfig`` (streaming inserts, as 1.x's StreamLoader wrote). Keys plowline has no
use for (``consumerSettings``, ``sinkSettings``, ``retrySettings``, ``monitoring`` …) are
returned in ``unmapped`` (2.x: each with its reason), never silently dropped: the caller
names them in one warning.

Notes:
    Pure: takes the parsed document, reads no file and no environment.
    Mutator and repeater may name their own ``output.good`` table (Snowplow lets them;
    usually ``${loader.output.good}``); each gets a ``BigQueryConfig`` for its table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from plowline_core.config import BigQueryConfig, LoadKind, LoadMode, WriteStreamKind
from plowline_core.errors import ConfigError
from plowline_core.v2_config import V2_NAME, V2Config, is_v2_document, leaf_paths, parse_v2
from plowline_core.v2_names import V2Names

V1_NAME = "Snowplow 1.x HOCON config"

# Every 1.x leaf plowline reads (or accepts as the only value it can have): path -> type tag.
_TYPES = {
    "loader.input.type": "PubSub",
    "loader.output.good.type": "BigQuery",
    "loader.output.bad.type": "PubSub",
    "loader.output.types.type": "PubSub",
    "loader.output.failedInserts.type": "PubSub",
    "mutator.input.type": "PubSub",
    "mutator.output.good.type": "BigQuery",
    "repeater.input.type": "PubSub",
    "repeater.output.good.type": "BigQuery",
    "repeater.output.deadLetters.type": "Gcs",
}
_REQUIRED = (
    "projectId",
    "loader.input.subscription",
    "loader.output.good.datasetId",
    "loader.output.good.tableId",
    "loader.output.bad.topic",
    "loader.output.types.topic",
    "loader.output.failedInserts.topic",
    "mutator.input.subscription",
)
_READ = frozenset(
    {
        *_REQUIRED,
        "mutator.output.good.datasetId",
        "mutator.output.good.tableId",
        "repeater.input.subscription",
        "repeater.output.good.datasetId",
        "repeater.output.good.tableId",
        "repeater.output.deadLetters.bucket",
        *_TYPES,
    }
)


@dataclass(frozen=True, slots=True)
class PipelineConfig:
    """What a Snowplow config names, per service.

    Attributes:
        bigquery: the loader's view (input, table, topics); the dead-letter writer's too.
        mutator: the same with the mutator's table (1.x ``mutator.output.good``).
        repeater: the same with the repeater's table (1.x ``repeater.output.good``).
        failed_inserts_subscription: 1.x ``repeater.input.subscription`` (0.x: a flag).
        dead_end_bucket: 1.x ``repeater.output.deadLetters.bucket`` (0.x: a flag).
        unmapped: dotted paths of the keys plowline does not use, in document order
            (2.x: ``path (reason)``).
        layout: ``0.x``, ``1.x`` or ``2.x``.
        v2: the 2.x settings (2.x layout only).
        v2_names: the derived names of a 2.x config (2.x layout only).
    """

    bigquery: BigQueryConfig
    mutator: BigQueryConfig
    repeater: BigQueryConfig
    failed_inserts_subscription: str | None = None
    dead_end_bucket: str | None = None
    unmapped: tuple[str, ...] = ()
    layout: str = "0.x"
    v2: V2Config | None = None
    v2_names: V2Names | None = None

    @classmethod
    def from_document(
        cls, document: Mapping[str, Any], v2_overrides: Mapping[str, str | None] | None = None
    ) -> PipelineConfig:
        """Return the config of a parsed 0.x, 1.x or 2.x document.

        ``v2_overrides`` (``V2Names`` field → value) replace derived 2.x names.

        Raises:
            ConfigError: no known layout, or a required key missing or of the wrong type
                (the message names the dotted path).
        """
        if "schema" in document and "data" in document:
            bigquery = BigQueryConfig.parse(document)
            return cls(bigquery, bigquery, bigquery)
        if "projectId" in document or "loader" in document:
            return _from_v1(document)
        if is_v2_document(document):
            return _from_v2(parse_v2(document), v2_overrides or {})
        raise ConfigError(
            "neither a Snowplow 0.x bigquery_config (self-describing JSON with schema and data) "
            "nor a 1.x config (projectId, loader, mutator, repeater) nor a 2.x config "
            f"(input.subscription, output.good, output.bad); keys found: {sorted(document)}"
        )


def _from_v1(tree: Mapping[str, Any]) -> PipelineConfig:
    missing = [path for path in _REQUIRED if _get(tree, path) is None]
    if missing:
        raise ConfigError(
            f"{', '.join(missing)}: missing (required by the Snowplow 1.x config layout)"
        )
    for path, expected in _TYPES.items():
        found = _get(tree, path)
        if found is not None and found != expected:
            raise ConfigError(f"{path}: {found!r} is not supported (plowline reads {expected!r})")
    good = (_text(tree, "loader.output.good.datasetId"), _text(tree, "loader.output.good.tableId"))
    bigquery = BigQueryConfig(
        name=V1_NAME,
        id="",
        project_id=_text(tree, "projectId"),
        dataset_id=good[0],
        table_id=good[1],
        input=_text(tree, "loader.input.subscription"),
        types_topic=_text(tree, "loader.output.types.topic"),
        types_subscription=_text(tree, "mutator.input.subscription"),
        bad_rows=_text(tree, "loader.output.bad.topic"),
        failed_inserts=_text(tree, "loader.output.failedInserts.topic"),
        load=LoadMode(LoadKind.STREAMING_INSERTS, retry=False),
        purpose="ENRICHED_EVENTS",
    )
    return PipelineConfig(
        bigquery=bigquery,
        mutator=_table(tree, "mutator", bigquery),
        repeater=_table(tree, "repeater", bigquery),
        failed_inserts_subscription=_text(tree, "repeater.input.subscription", required=False),
        dead_end_bucket=_text(tree, "repeater.output.deadLetters.bucket", required=False),
        unmapped=tuple(path for path in leaf_paths(tree) if path not in _READ),
        layout="1.x",
    )


def _from_v2(v2: V2Config, overrides: Mapping[str, str | None]) -> PipelineConfig:
    names = V2Names.derive(v2, overrides)
    bigquery = BigQueryConfig(
        name=V2_NAME,
        id="",
        project_id=v2.project,
        dataset_id=v2.dataset,
        table_id=v2.table,
        input=v2.subscription,
        types_topic=names.types_topic,
        types_subscription=names.types_subscription,
        bad_rows=v2.bad_topic,
        failed_inserts=names.failed_inserts_topic,
        load=LoadMode(LoadKind.STORAGE_WRITE_API, stream=WriteStreamKind.DEFAULT),
        purpose="ENRICHED_EVENTS",
    )
    return PipelineConfig(
        bigquery=bigquery,
        mutator=bigquery,
        repeater=bigquery,
        failed_inserts_subscription=names.failed_inserts_subscription,
        dead_end_bucket=names.dead_end_bucket,
        unmapped=v2.ignored,
        layout="2.x",
        v2=v2,
        v2_names=names,
    )


def _table(tree: Mapping[str, Any], app: str, loader: BigQueryConfig) -> BigQueryConfig:
    """Return ``loader`` on ``<app>.output.good``'s table (the loader's when absent)."""
    dataset = _text(tree, f"{app}.output.good.datasetId", required=False)
    table = _text(tree, f"{app}.output.good.tableId", required=False)
    return replace(
        loader, dataset_id=dataset or loader.dataset_id, table_id=table or loader.table_id
    )


def _get(tree: Mapping[str, Any], path: str) -> Any:
    node: Any = tree
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def _text(tree: Mapping[str, Any], path: str, required: bool = True) -> Any:
    value = _get(tree, path)
    if value is None:
        if required:
            raise ConfigError(f"{path}: missing (required by the Snowplow 1.x config layout)")
        return None
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{path}: must be a non-empty string, got {value!r}")
    return value
