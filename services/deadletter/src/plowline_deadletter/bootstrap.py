"""The composition root of ``plowline-deadletter run``: build the clients, run until SIGTERM.

Notes:
    The only place that builds Google clients. Start: before the subscription is read
    (``/readyz`` false), the objects written within ``--dedupLookback`` are read back so
    that the writer knows the bad rows it wrote before a restart (``lookback``). Shutdown (SIGTERM/SIGINT): stop taking new
    messages, write every buffer, ack what is durable, then close the stream; anything
    not written is redelivered to the next instance.
"""

from __future__ import annotations

import time

import structlog
from plowline_cloud.chassis import stop_on_signals
from plowline_cloud.clients import storage_client, subscriber_client
from plowline_cloud.clock import SystemClock
from plowline_cloud.config_source import load_pipeline_config
from plowline_cloud.liveness import (
    EXIT_STOPPED,
    ProgressWatch,
    keep_consuming,
    serve_probes,
)
from plowline_cloud.metrics import MetricsRegistry
from plowline_cloud.pubsub.paths import subscription_path
from plowline_cloud.pubsub.streaming import PubSubSubscriber
from plowline_cloud.storage import GcsBlobStore, parse_gcs_url
from plowline_core.config import BigQueryConfig
from plowline_core.errors import ConfigError
from plowline_core.grants import Grant, ResourceKind

from plowline_deadletter.lookback import Lookback, recall_at_start
from plowline_deadletter.metrics import DeadLetterMetrics
from plowline_deadletter.settings import DeadLetterSettings
from plowline_deadletter.writer import DeadLetterWriter

_TICK_SECONDS = 0.5
_log = structlog.get_logger(__name__)


GRANTS: tuple[Grant, ...] = (
    Grant("roles/pubsub.subscriber", ResourceKind.SUBSCRIPTION, "--badRowsSub"),
    Grant("roles/storage.objectCreator", ResourceKind.BUCKET, "--bucket"),
    Grant("roles/storage.objectViewer", ResourceKind.BUCKET, "--bucket"),
)
"""What the dead-letter writer needs (``plowline_core.grants``; deploy/GKE.md grants these)."""


def load_config(settings: DeadLetterSettings) -> BigQueryConfig:
    """Read the Snowplow config (0.x JSON, 1.x or 2.x HOCON, a path or base64)."""
    return load_pipeline_config(settings.config, "--config").bigquery


def resolve(settings: DeadLetterSettings) -> tuple[BigQueryConfig, str, str]:
    """Return the config, the bad-rows subscription and the bucket (a 2.x config derives them).

    Raises:
        ConfigError: the subscription or the bucket is not given (0.x/1.x configs).
    """
    overrides = {"bad_rows_subscription": settings.bad_rows_sub, "bad_rows_bucket": settings.bucket}
    pipeline = load_pipeline_config(settings.config, "--config", v2_overrides=overrides)
    names = pipeline.v2_names
    subscription = names.bad_rows_subscription if names else settings.bad_rows_sub
    bucket = names.bad_rows_bucket if names else settings.bucket
    if subscription is None or bucket is None:
        raise ConfigError(
            "--badRowsSub and --bucket are required (PLOWLINE_DEADLETTER_BAD_ROWS_SUB, "
            "PLOWLINE_DEADLETTER_BUCKET); a 2.x config derives both"
        )
    return pipeline.bigquery, subscription, bucket


def run(settings: DeadLetterSettings) -> int:
    """Consume bad rows into the bucket until SIGTERM; return the exit code."""
    config, subscription, bucket_url = resolve(settings)
    bucket, prefix = parse_gcs_url(bucket_url)
    options = settings.options()
    registry = MetricsRegistry("deadletter")
    store = GcsBlobStore(
        storage_client(config.project_id, settings.storage_emulator_host), bucket, prefix
    )
    clock = SystemClock()
    metrics = DeadLetterMetrics.create(registry)
    writer = DeadLetterWriter(store, clock, options, metrics)
    client = subscriber_client(settings.pubsub_emulator_host)
    watch = ProgressWatch(settings.stall_timeout_s, time.monotonic)
    subscriber = PubSubSubscriber(
        client,
        subscription_path(config.project_id, subscription),
        max_messages=settings.max_outstanding,
        max_lease_seconds=int(options.window * 2 + 600),
        watch=watch,
    )
    registry.gauge(
        "deadletter_oldest_message_age_seconds",
        "Age since publish of the oldest bad row held (the backlog as this writer sees it)",
    ).set_function(subscriber.oldest_held_age_s)
    health = serve_probes(settings.port, registry, "deadletter", watch, lambda: subscriber.running)
    stop = stop_on_signals()
    lookback = Lookback(settings.dedup_lookback, settings.window)
    recall_at_start(store, writer, clock.now(), lookback, metrics, time.monotonic)
    subscriber.start(writer.receive)  # a SIGTERM meanwhile: the loop below ends at once
    _log.info(
        "dead-letter writer started",
        subscription=subscriber.subscription_path,
        bucket=bucket_url,
        port=health.port,
    )

    def tick() -> None:
        if not stop.wait(_TICK_SECONDS):
            writer.tick()

    code = EXIT_STOPPED
    try:
        code = keep_consuming(subscriber, watch, stop, tick, name="dead-letter writer").code
    finally:
        writer.close()
        subscriber.stop(timeout=30)
        client.close()
        health.stop()
        _log.info("dead-letter writer stopped", exit_code=code)
    return code
