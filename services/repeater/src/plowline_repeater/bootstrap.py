"""The composition root of ``plowline-repeater``: build the Google clients, wire, run.

Notes:
    The only place that builds Google clients. Re-inserts go through insertAll
    (insertId = event_id), except in exactly-once mode (``load.mode`` STORAGE_WRITE_API,
    ``stream`` exactly-once), where they go through the loader's ledger of event ids
    (``reinsert_sink``): a loader batch redelivered after the repeater re-inserted one of
    its refused rows (a crash before its ack, a Pub/Sub duplicate) then finds the row in
    the ledger instead of committing it a second time; and two deliveries of one failed
    insert held in one re-insert are written once (``DistinctRowSink``). The repeater
    ignores the loader's hand-over marks (``honour_hand_overs=False``): the ids it was
    handed are its own; a loader copy of one arriving later is dropped by the mark.
    Left open (see ``write_api_pending``): a loader crash between the failed-insert
    publish and the mark. ``replay --to table`` inserts through the same sink as ``run``
    (``reinsert_sink``), so a replay run again later writes no row twice in exactly-once
    mode either. Shutdown (SIGTERM/SIGINT): stop taking new
    messages, write the dead-end buffer and ack it, give waiting rows back, close the
    stream, exit 0. A crash instead loses nothing: unacked messages are redelivered.
    Exactly-once needs ONE repeater per failed-inserts subscription: two repeaters each
    holding a copy of one failed insert can both pass the ledger check before either
    commits, and BigQuery has no conditional insert to refuse the second. The deployment
    guarantees it (deploy/k8s/components/exactly-once: one replica, no autoscaler,
    ``Recreate`` rollouts), not this process.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import structlog
from plowline_cloud.bigquery import BigQueryRowSink, BigQueryTableSchemaStore
from plowline_cloud.chassis import package_version, stop_on_signals
from plowline_cloud.clients import (
    bigquery_client,
    publish_api_client,
    storage_client,
    subscriber_client,
)
from plowline_cloud.clock import SystemClock
from plowline_cloud.config_source import load_document, load_pipeline_config
from plowline_cloud.liveness import ProgressWatch, keep_consuming, serve_probes
from plowline_cloud.metrics import MetricsRegistry
from plowline_cloud.pubsub.paths import subscription_path, topic_path
from plowline_cloud.pubsub.publisher import PubSubPublisher
from plowline_cloud.pubsub.streaming import PubSubSubscriber
from plowline_cloud.service_settings import EmulatorEndpoints
from plowline_cloud.storage import GcsBlobStore, parse_gcs_url
from plowline_core.badrows import Processor
from plowline_core.config import BigQueryConfig, LoadKind, LoadMode, WriteStreamKind
from plowline_core.distinct_rows import DistinctRowSink
from plowline_core.errors import ConfigError, PlowlineError
from plowline_core.grants import Grant, ResourceKind
from plowline_core.pipeline_config import PipelineConfig
from plowline_core.ports import Clock, RowSink

from plowline_repeater.metrics import RepeaterMetrics
from plowline_repeater.progress import ProgressBar
from plowline_repeater.repeater import Repeater
from plowline_repeater.replay import (
    Destination,
    ObjectOutcome,
    Replayer,
    TableDestination,
    TopicDestination,
)
from plowline_repeater.replay_plan import TimeWindow, select_objects
from plowline_repeater.replay_report import render
from plowline_repeater.settings import STARTUP_TIMEOUT_S, RepeaterSettings, ReplaySettings

if TYPE_CHECKING:
    from google.cloud.bigquery import Client

ARTIFACT = "plowline-repeater"
_TICK_SECONDS = 0.5
_log = structlog.get_logger(__name__)


GRANTS: tuple[Grant, ...] = (
    Grant("roles/pubsub.subscriber", ResourceKind.SUBSCRIPTION, "--failedInsertsSub"),
    Grant("roles/bigquery.dataEditor", ResourceKind.DATASET, "datasetId"),
    Grant("roles/storage.objectCreator", ResourceKind.BUCKET, "--deadEndBucket"),
)
"""What ``plowline-repeater run`` needs (``plowline_core.grants``; deploy/GKE.md grants these).

``replay`` is an operator's command, run with the operator's own credentials.
"""


def repeater_version() -> str:
    """Return the installed plowline-repeater version (the bad rows' processor version)."""
    return package_version(ARTIFACT)


def load_config(value: str | Path) -> PipelineConfig:
    """Read the Snowplow config (0.x JSON or 1.x HOCON, a path or base64)."""
    return load_pipeline_config(value, "--config")


def reinsert_sink(
    load: LoadMode,
    bigquery: Client,
    table_ref: str,
    schema: BigQueryTableSchemaStore,
    grpc_host: str | None,
    ledger_table: str | None = None,
    *,
    startup_deadline: float = STARTUP_TIMEOUT_S,
) -> RowSink:
    """Return the sink the repeater re-inserts through (see the module notes).

    In exactly-once mode this makes sure the ledger exists, a call that ends within
    ``startup_deadline`` seconds (``ensure_ledger``) or raises a TransientError naming it.
    """
    if load.mode is LoadKind.STORAGE_WRITE_API and load.stream is WriteStreamKind.EXACTLY_ONCE:
        from plowline_cloud.write_api import write_client
        from plowline_cloud.write_api_pending import ExactlyOnceSink, ensure_ledger

        ledger = ledger_table or f"{table_ref}_ledger"  # the loader's default
        ensure_ledger(bigquery, ledger, deadline=startup_deadline)
        sink = ExactlyOnceSink(
            write_client(grpc_host),
            bigquery,
            table_ref,
            ledger,
            schema,
            honour_hand_overs=False,  # the loader's hand-overs are ours to write
        )
        return DistinctRowSink(sink)  # a failed insert delivered twice, held in one insert
    return BigQueryRowSink(bigquery, table_ref, schema)


def _events_table(
    config: BigQueryConfig,
    endpoints: EmulatorEndpoints,
    ledger_table: str | None,
    schema_refresh_s: float,
    clock: Clock,
    startup_deadline: float = STARTUP_TIMEOUT_S,
) -> tuple[Client, BigQueryTableSchemaStore, RowSink]:
    """Return the BigQuery client, the events table's schema store and its re-insert sink."""
    bigquery = bigquery_client(config.project_id, endpoints.bigquery_emulator_host)
    schema = BigQueryTableSchemaStore(bigquery, config.table_ref, schema_refresh_s, clock)
    sink = reinsert_sink(
        config.load,
        bigquery,
        config.table_ref,
        schema,
        endpoints.bigquery_emulator_grpc_host,
        ledger_table,
        startup_deadline=startup_deadline,
    )
    return bigquery, schema, sink


def run(settings: RepeaterSettings, endpoints: EmulatorEndpoints) -> int:
    """Repeat failed inserts until SIGTERM; return the exit code.

    Notes:
        The first log line (``repeater starting``) comes before any network call, and
        every start-up call has a deadline (``--startupTimeout``): a start-up either
        reaches ``repeater started`` or logs ``repeater did not start`` naming the call
        it waited on and exits 1, never waits silently. The clients of Pub/Sub and
        Cloud Storage connect lazily; only the exactly-once ledger is called before the
        probes answer.
    """
    pipeline = load_config(settings.config)
    config = pipeline.repeater
    load_document(settings.resolver, "--resolver")  # accepted as Snowplow passes it; checked
    options = settings.options(pipeline.dead_end_bucket)
    failed_inserts_sub = settings.failed_inserts_sub or pipeline.failed_inserts_subscription
    if failed_inserts_sub is None:
        raise ConfigError(
            "no failed-inserts subscription: pass --failedInsertsSub (0.x), set "
            "repeater.input.subscription in the 1.x config, or PLOWLINE_REPEATER_FAILED_INSERTS_SUB"
        )
    bucket, prefix = parse_gcs_url(options.dead_end_bucket or "")
    _log.info(
        "repeater starting",
        subscription=failed_inserts_sub,
        table=config.table_ref,
        load=config.load.mode.value,
        stream=config.load.stream.value if config.load.stream is not None else None,
        startup_timeout=settings.startup_timeout,
    )
    clock = SystemClock()
    try:
        bigquery, schema, sink = _events_table(
            config,
            endpoints,
            settings.ledger_table,
            settings.schema_refresh,
            clock,
            settings.startup_timeout,
        )
    except PlowlineError as error:
        _log.error("repeater did not start", waited_on=_waited_on(error), error=str(error))
        raise
    registry = MetricsRegistry("repeater")
    repeater = Repeater(
        sink,
        schema,
        GcsBlobStore(
            storage_client(config.project_id, endpoints.storage_emulator_host), bucket, prefix
        ),
        clock,
        options,
        Processor(ARTIFACT, repeater_version()),
        RepeaterMetrics.create(registry),
    )
    client = subscriber_client(endpoints.pubsub_emulator_host)
    watch = ProgressWatch(settings.stall_timeout_s, time.monotonic)
    subscriber = PubSubSubscriber(
        client,
        subscription_path(config.project_id, failed_inserts_sub),
        max_messages=settings.max_outstanding,
        max_lease_seconds=int(options.backoff_period + options.window + 600),
        watch=watch,
    )
    registry.gauge(
        "repeater_oldest_message_age_seconds",
        "Age since publish of the oldest failed insert held (the backlog as the repeater sees it)",
    ).set_function(subscriber.oldest_held_age_s)
    health = serve_probes(
        settings.port, registry, "repeater", watch, lambda: subscriber.running and repeater.ready
    )
    stop = stop_on_signals()
    subscriber.start(repeater.receive)
    _log.info(
        "repeater started",
        subscription=subscriber.subscription_path,
        table=config.table_ref,
        dead_end=options.dead_end_bucket,
        port=health.port,
    )
    try:
        return _loop(repeater, subscriber, watch, stop)
    finally:
        repeater.close()
        subscriber.stop(timeout=30)
        client.close()
        bigquery.close()  # type: ignore[no-untyped-call]  # google-cloud-bigquery leaves it unannotated
        health.stop()
        _log.info("repeater stopped")


def _waited_on(error: PlowlineError) -> str:
    """Return the call a start-up error names (``translated``'s ``<operation>: …``)."""
    return str(error).split(":", 1)[0]


def _loop(
    repeater: Repeater, subscriber: PubSubSubscriber, watch: ProgressWatch, stop: threading.Event
) -> int:
    def tick() -> None:
        repeater.step()
        repeater.arrived.wait(_TICK_SECONDS)

    return keep_consuming(subscriber, watch, stop, tick, name="repeater").code


def replay(settings: ReplaySettings, endpoints: EmulatorEndpoints) -> int:
    """Replay a dead-end path (see ``plowline_repeater.replay``); print the summary; return the exit code."""
    config = load_config(settings.config).repeater if settings.config is not None else None
    if config is None and not settings.dry_run:
        raise ConfigError("--config FILE is needed to know the table and the failedInserts topic")
    bucket, prefix = parse_gcs_url(settings.url)
    project = config.project_id if config is not None else None
    store = GcsBlobStore(storage_client(project, endpoints.storage_emulator_host), bucket, prefix)
    with ExitStack() as closing:
        destination = None
        if config is not None and not settings.dry_run:
            destination = closing.enter_context(_destination(settings, config, endpoints))
        selection = select_objects(store.list(), TimeWindow(settings.since, settings.until))
        bar = ProgressBar(len(selection.chosen), sys.stderr, "replaying")
        bar.advance(0)  # shown from the start: the first object may take a while

        totals = [0, 0]  # rows recovered and failed so far, for the bar's note

        def advance(outcome: ObjectOutcome) -> None:
            totals[0] += outcome.recovered
            totals[1] += outcome.failed
            bar.advance(note=f"{totals[0]} recovered, {totals[1]} failed")

        processor = Processor(ARTIFACT, repeater_version())
        try:
            report = Replayer(store, destination, processor).run(
                selection, settings.error_matches, advance
            )
        finally:
            bar.close()
    where = store.url
    print(render(report, where, _describe(settings, config)), end="")
    if report.error is not None:
        print(f"{ARTIFACT} replay: {report.error}", file=sys.stderr)
    return report.exit_code


def _describe(settings: ReplaySettings, config: BigQueryConfig | None) -> str:
    if config is None:
        return "the --to target (no --config given)"
    if settings.to == "failed-inserts":
        return f"topic {topic_path(config.project_id, config.failed_inserts)}"
    return f"table {config.table_ref}"


@contextmanager
def _destination(
    settings: ReplaySettings, config: BigQueryConfig, endpoints: EmulatorEndpoints
) -> Iterator[Destination]:
    if settings.to == "failed-inserts":
        topic = topic_path(config.project_id, config.failed_inserts)
        with publish_api_client(endpoints.pubsub_emulator_host) as publisher:
            yield TopicDestination(PubSubPublisher(publisher, topic), topic)
        return
    # The write mode's own sink: in exactly-once mode through the loader's ledger, so a
    # replay run again (after a crash, or by hand) any time later writes no row twice.
    bigquery, _, sink = _events_table(config, endpoints, settings.ledger_table, 1.0, SystemClock())
    try:
        yield TableDestination(sink, config.table_ref)
    finally:
        bigquery.close()  # type: ignore[no-untyped-call]  # google-cloud-bigquery leaves it unannotated
