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

Exit codes: 0 stopped by SIGTERM/SIGINT (in-flight batch finished), 1 the query failed
or stalled (a micro-batch held longer than --stall-timeout without going through: the
loader exits by itself so that it is restarted, ``vigil.py``), 2 usage or configuration
error.
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

import structlog
from plowline_cloud.command_line import option_names
from plowline_cloud.iglu import NOT_FOUND_HELP
from plowline_cloud.liveness import STALL_TIMEOUT_HELP, ProgressWatch, register_watch_metrics
from plowline_cloud.logging import configure_logging
from plowline_cloud.metrics import MetricsRegistry
from plowline_core.errors import ConfigError
from plowline_core.schema.entity import ColumnMode
from plowline_core.webhook import alert_message, setup_problem

from plowline_loader.bootstrap import ARTIFACT, worker_config
from plowline_loader.cli import EXIT_UNAVAILABLE, EXIT_USAGE, loader_version
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
        "Snowplow config: 0.x bigquery_config JSON or 1.x HOCON, as a path or base64 "
        "(or PLOWLINE_LOADER_CONFIG)"
    ),
    "--resolver": "Iglu resolver config (JSON or HOCON), as a path or base64",
    "--checkpoint": "Spark checkpoint directory (local path or gs://…; default: a new temp dir)",
    "--master": (
        "Spark master of a plain run (default local[*]); under spark-submit leave it out: "
        "spark-submit's --master applies"
    ),
    "--port": "health and metrics port (default 8083)",
    "--max-messages": (
        "messages per partition per micro-batch (default 10000; --max-bytes may stop it sooner)"
    ),
    "--max-bytes": "bytes per partition per micro-batch (default 16 MiB)",
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
    "--grace-period": "seconds allowed for a graceful stop on SIGTERM (default 30)",
    "--stall-timeout": (
        f"{STALL_TIMEOUT_HELP}; the loader then also exits by itself with code 1, so that "
        "any supervisor restarts it (default 600)"
    ),
    "--webhook-endpoint": (
        "URL that receives 2.x's webhook alerts (setup errors: table missing, no access, "
        "columns that cannot be added) and heartbeats while healthy (default: none sent)"
    ),
    "--webhook-tags": "name=value,… pairs added to every webhook payload (default: none)",
    "--webhook-heartbeat": "seconds between webhook heartbeats while healthy (default 3600)",
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
        if flag not in ("--config", "--resolver"):
            parser.add_argument(flag, metavar="VALUE", help=text)
    parser.set_defaults(handler=run)


def add_common_flags(parser: argparse.ArgumentParser) -> None:
    """Add the flags ``run`` and ``backfill`` share."""
    parser.add_argument("--config", required=True, metavar="PATH|BASE64", help=_FLAGS["--config"])
    parser.add_argument(
        "--resolver", required=True, metavar="PATH|BASE64", help=_FLAGS["--resolver"]
    )
    parser.add_argument(
        "--column-mode",
        choices=[mode.value for mode in ColumnMode],
        help="full: one column per full SchemaVer (loader 1.x, default); major: per model (2.x)",
    )
    parser.add_argument("--iglu-not-found", metavar="NAME=STATUS,…;…", help=NOT_FOUND_HELP)


def settings_from(args: argparse.Namespace) -> LoaderSettings:
    """Return the settings from the parsed flags over the environment (ConfigError if bad)."""
    names = [flag[2:].replace("-", "_") for flag in _FLAGS] + ["column_mode", "iglu_not_found"]
    return load_settings({name: getattr(args, name, None) for name in names})


def run(args: argparse.Namespace) -> int:
    """Run the streaming loader until SIGTERM; return the exit code."""
    from plowline_loader.spark import (  # Spark: slow import
        build_spark_session,
        command_spark_settings,
        launched_by_spark_submit,
    )

    try:
        settings = settings_from(args)
        configure_logging("loader", settings.log_level, settings.log_json)
        _warn_ignored(getattr(args, "ignored_options", []))
        _warn_missing_archive(settings.class_archive)
        config = worker_config(settings, loader_version())
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
    stop = _stop_event()
    registry = MetricsRegistry("loader")
    metrics = LoaderMetrics.create(registry)
    readiness = Readiness(metrics.ready)
    watch = ProgressWatch(settings.stall_timeout, time.monotonic)
    register_watch_metrics(registry, "loader", watch)
    health = serve_health(settings.port, registry, readiness, watch)
    webhook = _start_webhook(settings, registry, readiness)
    spark = build_spark_session(spark_settings)
    _on_stop_signals(stop)  # again: pyspark's SparkContext took SIGINT (KeyboardInterrupt)
    log_spark_session(spark)
    streams = _stream_settings(settings, settings.trigger_interval_s(config.bigquery.load))
    loader = StreamingLoader(spark, config, streams, readiness, metrics, watch=watch)
    code = EXIT_UNAVAILABLE  # an exception while starting
    try:
        query = loader.start()
        _log.info("serving health", port=health.port)
        ending = keep_vigil(query, stop, watch, _POLL_S)
        code = ending.code
        if ending.cause is not None and ending.cause.startswith("stalled"):
            arm_hard_exit(code, settings.grace_period)
    finally:
        loader.stop(settings.grace_period * 0.8)
        spark.stop()
        health.stop()
        if webhook is not None:
            webhook.stop()
    return code


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
        backoff_max_s=settings.backoff_max,
    )


def _stop_event() -> threading.Event:
    stop = threading.Event()
    _on_stop_signals(stop)
    return stop


def _on_stop_signals(stop: threading.Event) -> None:
    """Make SIGTERM and SIGINT (Ctrl-C) set ``stop``: the graceful stop.

    Notes:
        Called before the Spark session is built and again after: pyspark's
        ``SparkContext`` installs its own SIGINT handler (cancel the jobs, raise
        ``KeyboardInterrupt``), which would turn a Ctrl-C into a traceback instead of
        finishing the batch in flight.
    """

    def handle(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, handle)
    signal.signal(signal.SIGINT, handle)
