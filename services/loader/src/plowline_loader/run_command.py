"""``plowline-loader run``: stream enriched events from Pub/Sub into BigQuery until SIGTERM.

Settings: flags over ``PLOWLINE_LOADER_*`` variables over defaults (``settings.py``);
the Snowplow ``bigquery_config`` names the input subscription, the table and the topics.
The driver serves ``/healthz``, ``/readyz`` and ``/metrics`` on ``--port``; executors
report their counts back through each micro-batch (``partition.py``). With
``--webhook-endpoint`` it also POSTs Snowplow 2.x's webhook payloads there: an alert when a
batch is held back by a setup error (table missing, no access, columns that cannot be
added; once until a batch goes through again), a heartbeat every ``--webhook-heartbeat``
seconds while ready (``plowline_cloud.webhook``).

The default command: ``plowline-loader --config … --resolver …`` runs. Options it does not
know (the Dataflow loader's ``--runner``, ``--project``, ``--region``, ``--tempLocation`` …)
are ignored, and named in one warning at start.

Snowplow 2.x's command line works as it is: ``plowline-loader --config config.hocon
--iglu-config resolver.json``. A 2.x config sets the defaults 2.x has (Storage Write API,
``major`` columns, batching.maxDelay as --trigger-interval, batching.maxBytes as
--max-bytes, monitoring.healthProbe.port as --port …; a flag or variable still wins), and
the loader creates 2.x's table at start when it is missing.

Exit codes: 0 stopped by SIGTERM/SIGINT (in-flight batch finished), 1 the query failed
or stalled (a micro-batch held longer than --stall-timeout without going through: the
loader exits by itself so that it is restarted, ``vigil.py``), 2 usage or configuration
error.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import structlog
from plowline_cloud.chassis import EXIT_UNAVAILABLE, EXIT_USAGE, stop_on_signals
from plowline_cloud.command_line import option_names
from plowline_cloud.config_source import IGLU_CONFIG_HELP
from plowline_cloud.iglu import NOT_FOUND_HELP
from plowline_cloud.liveness import STALL_TIMEOUT_HELP, ProgressWatch, register_watch_metrics
from plowline_cloud.logging import configure_logging
from plowline_cloud.metrics import MetricsRegistry
from plowline_core.errors import ConfigError, PlowlineError
from plowline_core.schema.entity import ColumnMode
from plowline_core.webhook import alert_message, setup_problem

from plowline_loader.bootstrap import (
    ARTIFACT,
    WorkerConfig,
    create_v2_table,
    read_config,
    worker_config,
)
from plowline_loader.cli import loader_version
from plowline_loader.health import Readiness, serve_health
from plowline_loader.metrics import LoaderMetrics
from plowline_loader.settings import LoaderSettings, load_settings
from plowline_loader.streaming import StreamingLoader, StreamSettings
from plowline_loader.vigil import arm_hard_exit, keep_vigil

if TYPE_CHECKING:
    from plowline_cloud.webhook import WebhookSender
    from pyspark.sql import SparkSession

_log = structlog.get_logger("plowline.loader")
_POLL_S = 1  # seconds; awaitTermination takes whole seconds
# Options whose value is handed to the settings as the user typed it (validated there).
_FLAGS = {
    "--config": (
        "Snowplow config: 0.x bigquery_config JSON, 1.x or 2.x HOCON, as a path or base64 "
        "(or PLOWLINE_LOADER_CONFIG)"
    ),
    "--resolver": "Iglu resolver config (JSON or HOCON), as a path or base64",
    "--iglu-config": IGLU_CONFIG_HELP,
    "--checkpoint": "Spark checkpoint directory (local path or gs://…; default: a new temp dir)",
    "--master": (
        "Spark master of a plain run (default local[*]); under spark-submit leave it out: "
        "spark-submit's --master applies"
    ),
    "--port": "health and metrics port (default 8083)",
    "--max-messages": (
        "messages a task pulls before writing them: per partition per micro-batch, or per "
        "slice of a long-lived task (default 10000; --max-bytes may stop it sooner)"
    ),
    "--max-bytes": "bytes a task pulls before writing them, as --max-messages (default 16 MiB)",
    "--partitions": "Spark partitions (concurrent pull/insert tasks) per micro-batch (default 2)",
    "--trigger-interval": (
        "seconds between micro-batch starts (default: load.frequency for FILE_LOADS, "
        "else 0: back to back)"
    ),
    "--staging-bucket": "FILE_LOADS: bucket (or gs://bucket) where rows are staged for load jobs",
    "--ledger-table": (
        "STORAGE_WRITE_API exactly-once: project.dataset.table of the ledger "
        "(default: <events table>_ledger)"
    ),
    "--types-topic": (
        "2.x config: the types topic (default projects/P/topics/plowline-<dataset>-<table>-types"
        "; or PLOWLINE_V2_TYPES_TOPIC)"
    ),
    "--failed-inserts-topic": (
        "2.x config: the failed-inserts topic (default projects/P/topics/"
        "plowline-<dataset>-<table>-failed-inserts; or PLOWLINE_V2_FAILED_INSERTS_TOPIC)"
    ),
    "--too-many-columns-delay": (
        "seconds before a type still without a column (e.g. the table at BigQuery's column "
        "limit) is announced again (default 600; 2.x config: retries.tooManyColumns.delay)"
    ),
    "--grace-period": "seconds allowed for a graceful stop on SIGTERM (default 30)",
    "--task-seconds": (
        "seconds a Spark task keeps pulling, writing and acking slice after slice (each of "
        "at most --max-messages) before the next micro-batch is planned; it ends sooner when "
        "the subscription is idle. Fewer micro-batches cost less CPU; metrics arrive when a "
        "task ends. At most half of --grace-period and a quarter of --stall-timeout; 0: one "
        "slice a task (default 15; FILE_LOADS and exactly-once always use one slice)"
    ),
    "--stall-timeout": (
        f"{STALL_TIMEOUT_HELP}; the loader then also exits by itself with code 1, so that "
        "any supervisor restarts it (default 600)"
    ),
    "--max-bytes-single-payload": (
        "compressed input: the longest record read from a gzip or zstd batch; a longer one "
        "is a size_violation failed event (2.x's decompression.maxBytesSinglePayload, "
        "default 10000000)"
    ),
    "--max-bytes-in-batch": (
        "compressed input: decompressed bytes held per chunk being written (2.x's "
        "decompression.maxBytesInBatch, default 5242880)"
    ),
    "--exit-on-missing-iglu-schema": (
        "true: hold the events whose schema no Iglu registry has (unacked, shown in /readyz), "
        "loading the rest, and fail them after --missing-schema-bound; false: fail them at "
        "once (2.x's exitOnMissingIgluSchema; default: true for --column-mode major, else false)"
    ),
    "--missing-schema-bound": (
        "seconds after its publish time an event waits for a missing schema before it "
        "becomes a loader_iglu_error (default 21600 = 6 h; at most 6 days: keep it well "
        "inside the subscription's message retention)"
    ),
    "--webhook-endpoint": (
        "URL that receives 2.x's webhook payloads (POST JSON; 2.x's "
        "monitoring.webhook.endpoint; default: none sent): an alert on a setup error (table "
        "missing, no access, columns that cannot be added; iglu:com.snowplowanalytics."
        "monitoring.loader/alert/jsonschema/1-0-0) and a heartbeat (…/heartbeat/jsonschema/"
        "1-0-0) every --webhook-heartbeat seconds while ready"
    ),
    "--webhook-heartbeat": "seconds between heartbeats (default 300, 2.x's 5 minutes)",
    "--webhook-tags": (
        "NAME=VALUE,… sent with every alert and heartbeat (2.x's monitoring.webhook.tags)"
    ),
    "--class-archive": (
        "the driver JVM's class archive, used when the file exists: the JVM starts in about "
        "half the CPU (create it with `plowline-loader class-archive PATH`)"
    ),
}


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``run`` subcommand."""
    parser = subparsers.add_parser(
        "run",
        help="stream enriched events from Pub/Sub into BigQuery (Spark Structured Streaming)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,  # a Beam option must never be taken for an abbreviated flag
    )
    add_common_flags(parser)
    for flag, text in _FLAGS.items():
        if flag not in ("--config", "--resolver", "--iglu-config"):
            parser.add_argument(flag, metavar="VALUE", help=text)
    parser.set_defaults(handler=run)


def add_common_flags(parser: argparse.ArgumentParser) -> None:
    """Add the flags ``run`` and ``backfill`` share."""
    parser.add_argument("--config", required=True, metavar="PATH|BASE64", help=_FLAGS["--config"])
    parser.add_argument("--resolver", metavar="PATH|BASE64", help=_FLAGS["--resolver"])
    parser.add_argument("--iglu-config", metavar="PATH|BASE64", help=_FLAGS["--iglu-config"])
    parser.add_argument(
        "--column-mode",
        choices=[mode.value for mode in ColumnMode],
        help="full: one column per full SchemaVer (loader 1.x, default); major: per model "
        "(2.x, the default for a 2.x config)",
    )
    parser.add_argument("--iglu-not-found", metavar="NAME=STATUS,…;…", help=NOT_FOUND_HELP)


def settings_from(args: argparse.Namespace) -> LoaderSettings:
    """Return the settings from the parsed flags over the environment (ConfigError if bad)."""
    names = [flag[2:].replace("-", "_") for flag in _FLAGS] + ["column_mode", "iglu_not_found"]
    return load_settings({name: getattr(args, name, None) for name in names})


def run(args: argparse.Namespace) -> int:
    """Run the streaming loader until SIGTERM; return the exit code."""
    from plowline_loader.spark.session import (  # Spark: slow import
        build_spark_session,
        command_spark_settings,
        launched_by_spark_submit,
    )

    try:
        settings = settings_from(args)
        configure_logging("loader", settings.log_level, settings.log_json)
        _warn_ignored(getattr(args, "ignored_options", []))
        _warn_missing_archive(settings.class_archive)
        settings, pipeline = read_config(settings)
        settings.webhook()  # a 2.x config's monitoring.webhook.endpoint, checked as a flag is
        config = worker_config(settings, loader_version(), pipeline)
        ui = {"spark.ui.enabled": "true" if settings.spark_ui else "false"}
        spark_settings = command_spark_settings(
            settings.master,
            launched_by_spark_submit(),
            extra_conf=ui,
            class_archive=settings.class_archive,
        )
    except ConfigError as error:
        print(f"plowline-loader run: {error}", file=sys.stderr, flush=True)
        return EXIT_USAGE
    if config.creates_table and not _create_table(config):
        return EXIT_UNAVAILABLE
    stop = stop_on_signals()
    registry = MetricsRegistry("loader")
    metrics = LoaderMetrics.create(registry)
    readiness = Readiness(metrics.ready)
    watch = ProgressWatch(settings.stall_timeout, time.monotonic)
    register_watch_metrics(registry, "loader", watch)
    health = serve_health(settings.port, registry, readiness, watch)
    webhook = _start_webhook(settings, registry, readiness)
    spark = build_spark_session(spark_settings)
    stop_on_signals(stop)  # again: pyspark's SparkContext took SIGINT (KeyboardInterrupt)
    log_spark_session(spark)
    streams = _stream_settings(settings, settings.trigger_interval_s(config.bigquery.load))
    loader = StreamingLoader(spark, config, streams, readiness, metrics, watch=watch)
    code = EXIT_UNAVAILABLE  # an exception while starting
    try:
        query = loader.start()
        _log.info("serving health", port=health.port)
        ending = keep_vigil(query, stop, watch, _POLL_S)
        code = ending.code
        if ending.stalled:
            arm_hard_exit(code, settings.grace_period)
    finally:
        loader.stop(settings.grace_period * 0.8)
        spark.stop()
        health.stop()
        if webhook is not None:
            webhook.stop()
    return code


def _create_table(config: WorkerConfig) -> bool:
    """Create 2.x's table when it is missing, as loader 2.x does at start; False if it failed."""
    try:
        created = create_v2_table(config)
    except PlowlineError as error:
        _log.error(
            "cannot create the events table", table=config.bigquery.table_ref, error=str(error)
        )
        return False
    _log.info("table created" if created else "table exists", table=config.bigquery.table_ref)
    return True


def _start_webhook(
    settings: LoaderSettings, registry: MetricsRegistry, readiness: Readiness
) -> WebhookSender | None:
    """Start 2.x's webhook monitoring when an endpoint is set: alerts on setup errors, heartbeats.

    A setup error is alerted once until a batch goes through again (``WebhookSender.clear``).
    """
    webhook = settings.webhook()
    if webhook is None:
        return None
    from plowline_cloud.webhook import WebhookSender  # httpx: only when a webhook is set

    sender = WebhookSender(webhook, ARTIFACT, loader_version(), readiness, registry)

    def observe(error: str | None) -> None:
        if error is None:
            sender.clear()
            return
        problem = setup_problem(error)
        if problem is not None:
            sender.alert(alert_message(problem, error))

    readiness.observe(observe)
    sender.start()
    return sender


def log_spark_session(spark: SparkSession) -> None:
    """Log where the driver runs: the master, deploy mode and driver address in effect."""
    conf = spark.sparkContext.getConf()
    _log.info(
        "spark session",
        master=spark.sparkContext.master,
        deploy_mode=conf.get("spark.submit.deployMode", "client"),
        driver_host=conf.get("spark.driver.host"),
        bind_address=conf.get("spark.driver.bindAddress"),
        app_id=spark.sparkContext.applicationId,
    )


def _warn_ignored(options: list[str]) -> None:
    if options:
        _log.warning(
            "options ignored: plowline-loader does not use them (Dataflow/Beam options?)",
            options=option_names(options),
        )


def _warn_missing_archive(path: str | None) -> None:
    if path is not None and not Path(path).is_file():
        _log.warning(
            "class archive not found: the JVM starts without it (slower)",
            path=path,
            fix=f"plowline-loader class-archive {path}",
        )


def _stream_settings(settings: LoaderSettings, trigger_interval_s: float) -> StreamSettings:
    checkpoint = settings.checkpoint or tempfile.mkdtemp(prefix="plowline-loader-checkpoint-")
    return StreamSettings(
        checkpoint=checkpoint,
        partitions=settings.partitions,
        max_messages=settings.max_messages,
        max_bytes=settings.max_bytes,
        pull_timeout_s=settings.pull_timeout,
        ack_deadline_s=settings.ack_deadline,
        lease_interval_s=settings.lease_interval,
        trigger_interval_s=trigger_interval_s,
        task_seconds=settings.task_seconds,
        backoff_initial_s=settings.backoff_initial,
        backoff_max_s=settings.backoff_max,
        setup_backoff_s=settings.setup_backoff,
    )
