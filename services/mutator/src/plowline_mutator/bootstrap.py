"""The mutator's one composition root: the only place that builds Google clients and adapters.

Every subcommand calls ``build_runtime`` (or ``build_table_client`` for ``create``) with
its validated settings; the service layer and the HTTP API receive what is built here.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from google.cloud import bigquery
from plowline_cloud.clients import bigquery_client, subscriber_client
from plowline_cloud.clock import SystemClock
from plowline_cloud.config_source import load_pipeline_config
from plowline_cloud.iglu import LoggedOutages, load_resolver
from plowline_cloud.liveness import ProgressWatch
from plowline_cloud.metrics import MetricsRegistry
from plowline_cloud.pubsub.paths import subscription_path
from plowline_cloud.pubsub.streaming import PubSubSubscriber
from plowline_cloud.table_schema import BigQueryTableSchemaStore
from plowline_cloud.webhook import WebhookSender
from plowline_core.config import BigQueryConfig
from plowline_core.errors import ConfigError
from plowline_core.grants import Grant, ResourceKind
from plowline_core.iglu.config import parse_not_found
from plowline_core.iglu.resolver import Resolver
from plowline_core.schema.legacy import NO_RULES, ColumnRules

from plowline_mutator.listener import TypesListener
from plowline_mutator.metrics import MutatorMetrics
from plowline_mutator.mutation import Mutator
from plowline_mutator.settings import MutatorSettings

GRANTS: tuple[Grant, ...] = (
    Grant("roles/pubsub.subscriber", ResourceKind.SUBSCRIPTION, "typesSubscription"),
    Grant("roles/bigquery.dataEditor", ResourceKind.DATASET, "datasetId"),
)
"""What the mutator's clients need (``plowline_core.grants``; deploy/GKE.md grants these)."""


@dataclass
class Runtime:
    """What a running mutator holds: table config, clients, adapters and the service."""

    settings: MutatorSettings
    table: BigQueryConfig
    bigquery: bigquery.Client
    resolver: Resolver
    schema_store: BigQueryTableSchemaStore
    mutator: Mutator
    metrics: MutatorMetrics
    watch: ProgressWatch
    webhook: WebhookSender | None = None  # setup-error alerts (2.x's monitoring.webhook)
    _closers: list[Any] = field(default_factory=list)

    def subscriber(self) -> PubSubSubscriber:
        """Return a subscriber on the types subscription of the config (a short name: its project)."""
        client = subscriber_client(self.settings.pubsub_emulator_host)
        self._closers.append(client)
        path = subscription_path(self.table.project_id, self.table.types_subscription)
        return PubSubSubscriber(client, path, callback_threads=4, watch=self.watch)

    def listener(self) -> TypesListener:
        """Return the types listener over this runtime's mutator."""
        return TypesListener(
            self.mutator,
            self.metrics,
            retry_delay=self.settings.retry_delay,
            verbose=self.settings.verbose,
            alerts=self.webhook,
        )

    def close(self) -> None:
        """Close the clients this runtime opened (and send the alerts still queued)."""
        if self.webhook is not None:
            self.webhook.stop()
        for closer in self._closers:
            closer.close()
        self.bigquery.close()  # type: ignore[no-untyped-call]  # untyped in the client


def load_table_config(value: str | Path, types_subscription: str | None = None) -> BigQueryConfig:
    """Read the Snowplow config (0.x JSON, 1.x/2.x HOCON, a path or base64): the mutator's table.

    ``types_subscription`` overrides a 2.x config's derived one.

    Raises:
        ConfigError: unreadable, unparsable or invalid (the message starts with --config).
    """
    overrides = {"types_subscription": types_subscription}
    return load_pipeline_config(value, "--config", v2_overrides=overrides).mutator


def load_column_rules(value: str | Path) -> ColumnRules:
    """Return a 2.x config's ``skipSchemas``/``legacyColumns``/``legacyColumnMode`` (others: none).

    Raises:
        ConfigError: unreadable, unparsable or invalid (the message starts with --config).
    """
    v2 = load_pipeline_config(value, "--config").v2
    if v2 is None:
        return NO_RULES
    return ColumnRules(v2.skip_schemas, v2.legacy_columns, v2.legacy_column_mode)


def build_table_client(settings: MutatorSettings) -> tuple[BigQueryConfig, bigquery.Client]:
    """Return the table config and a BigQuery client for its project."""
    settings.require("config")
    assert settings.config is not None  # checked by require
    table = load_table_config(settings.config, settings.types_subscription)
    return table, bigquery_client(table.project_id, settings.bigquery_emulator_host)


def build_runtime(settings: MutatorSettings) -> Runtime:
    """Build clients, the resolver, the schema store and the mutator from settings."""
    settings.require("config", "resolver")
    assert settings.resolver is not None  # checked by require
    clock = SystemClock()
    try:
        not_found = parse_not_found(settings.iglu_not_found or "")
    except ConfigError as error:
        raise ConfigError(f"--iglu-not-found: {error}") from error
    resolver = load_resolver(settings.resolver, clock, not_found, LoggedOutages())
    table, client = build_table_client(settings)
    store = BigQueryTableSchemaStore(client, table.table_ref, settings.refresh_interval, clock)
    assert settings.config is not None  # checked by require
    rules = load_column_rules(settings.config)
    mutator = Mutator(resolver, store, settings.column_mode, threading.Lock(), rules=rules)
    watch = ProgressWatch(settings.stall_timeout, time.monotonic)
    metrics = MutatorMetrics()
    webhook = start_webhook(settings, metrics.registry)
    return Runtime(settings, table, client, resolver, store, mutator, metrics, watch, webhook)


def start_webhook(settings: MutatorSettings, registry: MetricsRegistry) -> WebhookSender | None:
    """Start the sender of setup-error alerts when a webhook endpoint is set.

    Notes:
        Alerts only: the loader sends the pipeline's heartbeats (one app, as 2.x is), so
        the mutator's sender is never healthy for a heartbeat.
    """
    webhook = settings.webhook()
    if webhook is None:
        return None
    sender = WebhookSender(webhook, "plowline-mutator", _version(), lambda: False, registry)
    sender.start()
    return sender


def _version() -> str:
    try:
        return metadata.version("plowline-mutator")
    except metadata.PackageNotFoundError:
        return "0+unknown"
