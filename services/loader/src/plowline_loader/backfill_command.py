"""``plowline-loader backfill``: load archived enriched TSV files with the streaming loader's sinks.

A Spark batch job: one task per file (local path or ``gs://``, plain or ``.gz``), each
running the same ``BatchProcessor`` as ``run`` (table, failedInserts, badRows, types).
Progress (files done) is printed on stderr while it runs; a summary at the end.

Exit codes: 0 every file loaded, 1 a dependency kept failing (re-run: inserts carry
insertId = event_id), 2 usage or configuration error.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections.abc import Sequence

from plowline_cloud.chassis import EXIT_OK, EXIT_UNAVAILABLE, EXIT_USAGE
from plowline_cloud.logging import configure_logging
from plowline_core.errors import ConfigError

from plowline_loader.archive import ArchivePartition, list_sources
from plowline_loader.batch.outcome import BatchOutcome
from plowline_loader.bootstrap import worker_config
from plowline_loader.cli import loader_version
from plowline_loader.run_command import add_common_flags, log_spark_session
from plowline_loader.settings import load_settings

_PROGRESS_S = 2.0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``backfill`` subcommand."""
    parser = subparsers.add_parser(
        "backfill",
        help="load archived enriched TSV files (local or gs://, plain or .gz) with Spark",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_common_flags(parser)
    parser.add_argument(
        "--master",
        metavar="VALUE",
        help=(
            "Spark master of a plain run (default local[*]); under spark-submit leave it "
            "out: spark-submit's --master applies"
        ),
    )
    parser.add_argument(
        "sources",
        nargs="+",
        metavar="SOURCE",
        help="file, directory or gs://; on a multi-machine cluster use gs:// (executors open "
        "local paths on their own disks)",
    )
    parser.set_defaults(handler=run)


def render_summary(outcome: BatchOutcome, files: int, seconds: float) -> str:
    """Return the summary printed at the end of a backfill."""
    rate = outcome.events_in / seconds if seconds > 0 else 0.0
    bad = ", ".join(f"{k}={v}" for k, v in sorted(outcome.bad_by_code.items())) or "none"
    failed = ", ".join(f"{k}={v}" for k, v in sorted(outcome.failed_by_reason.items())) or "none"
    return "\n".join(
        [
            f"files={files} events={outcome.events_in} good={outcome.good} "
            f"bad={outcome.bad} failed={outcome.failed} types_published={outcome.types_published}",
            f"bad by type: {bad}",
            f"failed inserts by reason: {failed}",
            f"seconds={seconds:.1f} events/s={rate:.0f}",
        ]
    )


def run(args: argparse.Namespace) -> int:
    """Run the backfill; return the exit code."""
    from plowline_loader.spark.session import (  # Spark: slow import
        build_spark_session,
        command_spark_settings,
        launched_by_spark_submit,
    )

    try:
        settings = load_settings(
            {
                "config": args.config,
                "resolver": args.resolver,
                "iglu_config": args.iglu_config,
                "column_mode": args.column_mode,
                "iglu_not_found": args.iglu_not_found,
                "master": args.master,
            }
        )
        configure_logging("loader", settings.log_level, settings.log_json)
        config = worker_config(settings, loader_version())
        files = list_sources(
            args.sources, settings.storage_emulator_host, config.bigquery.project_id
        )
        spark_settings = command_spark_settings(
            settings.master,
            launched_by_spark_submit(),
            app_name="plowline-backfill",
            class_archive=settings.class_archive,  # PLOWLINE_LOADER_CLASS_ARCHIVE
        )
    except ConfigError as error:
        _say(str(error))
        return EXIT_USAGE
    spark = build_spark_session(spark_settings)
    log_spark_session(spark)
    started = time.monotonic()
    partition = ArchivePartition(config, settings.storage_emulator_host)
    done = threading.Event()
    progress = threading.Thread(target=_progress, args=(spark, len(files), done), daemon=True)
    progress.start()
    try:
        rdd = spark.sparkContext.parallelize(files, len(files))
        outcomes: Sequence[BatchOutcome] = rdd.mapPartitions(partition).collect()
    except Exception as error:  # Spark wraps the task's error in its own (Py4J) exception
        _say(f"backfill failed: {str(error).splitlines()[0]}")
        return EXIT_UNAVAILABLE
    finally:
        done.set()
        progress.join()
        spark.stop()
    total = BatchOutcome()
    for outcome in outcomes:
        total = total.merge(outcome)
    _say(render_summary(total, len(files), time.monotonic() - started))
    return EXIT_OK


def _progress(spark: object, files: int, done: threading.Event) -> None:
    tracker = spark.sparkContext.statusTracker()  # type: ignore[attr-defined]
    while not done.wait(_PROGRESS_S):
        finished = 0
        for stage_id in tracker.getActiveStageIds():
            stage = tracker.getStageInfo(stage_id)
            if stage is not None:
                finished += stage.numCompletedTasks
        _say(f"progress: {finished}/{files} files done")


def _say(message: str) -> None:
    print(f"plowline-loader backfill: {message}", file=sys.stderr, flush=True)
