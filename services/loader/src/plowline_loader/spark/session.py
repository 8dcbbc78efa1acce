"""Build the loader's SparkSession, tuned to start fast, with the ``pubsub`` source registered.

Notes:
    The settings follow docs/local-stack.md ("Spark, locally and as a cluster"): no UI, loopback binds,
    serial GC and C1-only JIT for the driver JVM, few shuffle partitions, in-memory catalog.
    Python workers run the interpreter that builds the session, so they import the same
    plowline packages. ``SPARK_LOCAL_IP`` is set (if unset) before the JVM starts because
    the JVM reads it from its environment, not from the Spark conf.
    Resident memory (the loader fits a small pod): the driver heap is capped (``driver_memory``) and the serial
    collector hands freed heap back to the OS. Python workers stay forked from
    ``pyspark.daemon`` and reused between tasks, so each keeps its clients: without the
    daemon Spark stops a worker after every task.
    Launchers (one image for every deployment): under ``spark-submit`` (the Spark operator's driver, a standalone
    cluster, YARN/Dataproc) the JVM is started before this code runs, with the master,
    driver host, bind address, driver memory and Python the launcher chose; settings made on
    the builder would override them (docs/local-stack.md), pinning every deployment to local
    mode on loopback. So with ``launcher=True`` none of those keys is set here. PySpark
    itself tells the two cases apart the same way: the launcher hands the Python driver its
    gateway in ``PYSPARK_GATEWAY_PORT``.
    Start-up (seconds to the first row): with ``class_archive`` the driver JVM maps its classes from an
    AppCDS archive (``class_archive``) instead of loading them. A plain run without
    ``SPARK_HOME`` runs Spark from a home without the zipped pyspark (``spark_home``), so
    the Python processes Spark starts import the installed, compiled pyspark. pyspark's
    NumPy converters are asked only once NumPy is loaded (``converters``): the driver does
    not import pandas.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pyspark
from plowline_core.errors import ConfigError
from pyspark.sql import SparkSession

from plowline_loader.source.pubsub_source import register_pubsub_source
from plowline_loader.spark.converters import ask_numpy_converters_lazily
from plowline_loader.spark.spark_home import spark_home_for

# C1 only needs a small code cache. A small young generation: the eden is touched in full
# between collections, and little survives a micro-batch. The free-ratio bounds let
# SerialGC shrink the old generation.
_JVM_OPTIONS = (
    "-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=64m -Xmn48m"
    " -XX:MinHeapFreeRatio=10 -XX:MaxHeapFreeRatio=30"
)
WORKER_DAEMON = "plowline_loader.spark.worker_daemon"
"""The executors' Python worker daemon (``worker_daemon``: pyspark's, preloaded)."""
LOCAL_MASTER = "local[*]"
"""The master of a plain ``plowline-loader run`` or ``backfill`` (no launcher, no --master)."""


@dataclass(frozen=True, slots=True)
class SparkSettings:
    """What varies between deployments of the loader's Spark session."""

    master: str | None = "local[2]"  # None: leave it to spark-submit / the Spark operator
    launcher: bool = False  # True: spark-submit started the driver; it owns the deployment keys
    app_name: str = "plowline-loader"
    checkpoint_dir: str | None = None
    shuffle_partitions: int = 2
    bind_address: str | None = "127.0.0.1"  # None on a cluster
    driver_memory: str | None = "512m"  # the driver JVM's -Xmx; None: Spark's default (1g)
    class_archive: str | None = None  # the driver JVM's class archive, used when it exists
    dump_class_archive: str | None = None  # write one at the JVM's exit (``class_archive``)
    extra_conf: Mapping[str, str] = field(default_factory=dict)


def spark_conf(settings: SparkSettings) -> dict[str, str]:
    """Return the Spark configuration for ``settings`` (fast-start defaults first)."""
    conf = {
        "spark.app.name": settings.app_name,
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.streaming.ui.enabled": "false",
        "spark.sql.shuffle.partitions": str(settings.shuffle_partitions),
        "spark.sql.catalogImplementation": "in-memory",
        # Non-daemon workers are never reused (Spark stops them after every task).
        "spark.python.worker.reuse": "true",
        # The workers' daemon imports what they need once, before it forks them.
        "spark.python.daemon.module": WORKER_DAEMON,
        # Local paths (a laptop's checkpoint, backfill files) without Hadoop's .crc side
        # files: every micro-batch writes two checkpoint files, and the checksummed file
        # system took 70-240 ms a batch doing it. gs:// paths are unaffected.
        "spark.hadoop.fs.file.impl": "org.apache.hadoop.fs.RawLocalFileSystem",
        "spark.hadoop.fs.AbstractFileSystem.file.impl": "org.apache.hadoop.fs.local.RawLocalFs",
    }
    if not settings.launcher:
        conf.update(_deployment_conf(settings))
    if settings.checkpoint_dir is not None:
        conf["spark.sql.streaming.checkpointLocation"] = settings.checkpoint_dir
    conf.update(settings.extra_conf)
    return conf


def _deployment_conf(settings: SparkSettings) -> dict[str, str]:
    """Return the keys a launcher owns: master, addresses, the driver's JVM and Python."""
    options = [_JVM_OPTIONS, archive_option(settings.class_archive)]
    if settings.dump_class_archive is not None:
        options.append(f"-XX:ArchiveClassesAtExit={settings.dump_class_archive}")
    conf = {
        "spark.driver.extraJavaOptions": " ".join(option for option in options if option),
        "spark.pyspark.python": sys.executable,
        "spark.pyspark.driver.python": sys.executable,
    }
    if settings.driver_memory is not None:
        conf["spark.driver.memory"] = settings.driver_memory
    if settings.master is not None:
        conf["spark.master"] = settings.master
    if settings.bind_address is not None:
        conf["spark.driver.host"] = settings.bind_address
        conf["spark.driver.bindAddress"] = settings.bind_address
    return conf


def archive_option(path: str | None) -> str:
    """Return the JVM option that maps the archive at ``path`` ("" when there is none).

    Raises:
        ConfigError: the path holds whitespace (Spark splits the JVM options on it).
    """
    if path is None:
        return ""
    check_archive_path(path)
    return f"-XX:SharedArchiveFile={path}" if Path(path).is_file() else ""


def check_archive_path(path: str) -> None:
    """Refuse a class archive path the JVM options cannot carry (whitespace, quotes)."""
    if any(char.isspace() or char in "'\"\\" for char in path):
        raise ConfigError(
            f"--class-archive {path!r}: choose a path without spaces or quotes "
            "(the JVM option that names it is split on them)"
        )


def launched_by_spark_submit() -> bool:
    """Say whether a launcher (``spark-submit``) started this driver's JVM before this code ran."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def command_spark_settings(
    master: str | None,
    launcher: bool,
    app_name: str = "plowline-loader",
    extra_conf: Mapping[str, str] | None = None,
    class_archive: str | None = None,
) -> SparkSettings:
    """Return the session settings of a loader command (``run``, ``backfill``).

    ``master`` is the ``--master`` flag (None: not given). Without a launcher it defaults
    to ``local[*]`` on loopback; under one the launcher's master and addresses stand (and
    its JVM options: ``class_archive``, the ``--class-archive`` flag, is for a plain run).

    Raises:
        ConfigError: ``--master`` given under a launcher (it would be silently ignored).
    """
    extra = dict(extra_conf or {})
    if not launcher:
        return SparkSettings(
            master=master or LOCAL_MASTER,
            app_name=app_name,
            extra_conf=extra,
            class_archive=class_archive,
        )
    if master is not None:
        raise ConfigError(
            f"--master {master} (PLOWLINE_LOADER_MASTER) is for a plain `plowline-loader` run; "
            "under spark-submit the master is the one spark-submit was given: pass "
            "`spark-submit --master ...` (or the SparkApplication's settings) and drop --master"
        )
    return SparkSettings(
        master=None,
        launcher=True,
        app_name=app_name,
        bind_address=None,
        driver_memory=None,
        extra_conf=extra,
    )


def _set_jvm_environment(settings: SparkSettings) -> None:
    """Set (unless set) what the driver JVM reads from its environment, not from its conf.

    Notes:
        Spark starts the Python processes of a Python data source (lookup, create, plan,
        the streaming source runner, the read tasks) with ``PYSPARK_DRIVER_PYTHON`` or
        ``PYSPARK_PYTHON``, else whatever ``python3`` is first on the PATH:
        ``spark.pyspark.python`` does not apply to them. A loader started from a virtual
        environment's script without that environment on the PATH would have those
        processes fail to import the source (or run another Python), so both name this
        interpreter. One interpreter also means one pool of reusable Python workers.
        ``SPARK_HOME``, when unset, names a home without the zipped pyspark
        (``spark_home``); one set by the user (a Spark distribution, the image) stands.
    """
    if settings.bind_address is not None:
        os.environ.setdefault("SPARK_LOCAL_IP", settings.bind_address)
    if "SPARK_HOME" not in os.environ:
        home = spark_home_for(Path(pyspark.__file__).parent, _cache_directory())
        if home is not None:
            os.environ["SPARK_HOME"] = str(home)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


def _cache_directory() -> Path:
    """Return the loader's directory in the user's cache (``$XDG_CACHE_HOME/plowline``)."""
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(root, "plowline")


def build_spark_session(settings: SparkSettings | None = None) -> SparkSession:
    """Start (or join) the SparkSession for ``settings`` and register the ``pubsub`` source."""
    settings = settings or SparkSettings()
    if not settings.launcher:
        _set_jvm_environment(settings)
    ask_numpy_converters_lazily()  # else the first JVM call imports pandas (``converters``)
    builder = SparkSession.builder
    for key, value in spark_conf(settings).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    register_pubsub_source(spark)
    return spark
