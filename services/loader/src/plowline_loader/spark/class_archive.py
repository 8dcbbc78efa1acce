"""The driver JVM's class archive: Spark's classes loaded once, mapped by every later start.

A JVM spends most of its start loading, parsing and verifying classes: about 4 of the
6-7 CPU-seconds the loader's JVM took before its first row. Java's class data
sharing (AppCDS, JDK 13+) dumps the classes a run loaded into an archive; a JVM started
with ``-XX:SharedArchiveFile`` maps them instead, already parsed and verified.

``write_class_archive(path)`` runs a session through what the loader's start does
(session, a Python streaming source, a foreachBatch collect, a checkpoint), lets the JVM
dump at exit, and moves the archive into place. ``plowline-loader class-archive PATH``
calls it; the loader's image does it at build time. ``run`` and ``backfill`` use
``--class-archive`` (``PLOWLINE_LOADER_CLASS_ARCHIVE``) when the file is there.

Notes:
    A truncated archive crashes the JVM at start (JDK 17 maps it without a checksum), so
    the dump goes to a temporary name and is renamed only once the JVM has exited and the
    dump is complete: the archive at ``path`` is whole or absent. An archive from another
    JDK or class path is refused by the JVM itself, which then starts without it.
"""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from plowline_core.errors import ConfigError
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadLimit
from pyspark.sql.types import LongType, StructField, StructType

from plowline_loader.spark.session import SparkSettings, build_spark_session, check_archive_path

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

_FORMAT = "plowline-class-archive"
_SCHEMA = StructType([StructField("n", LongType(), False)])
_JVM_EXIT_S = 300.0


class _OneBatchReader(DataSourceStreamReader):
    """Offer one micro-batch of two rows, then nothing."""

    def initialOffset(self) -> dict[str, int]:  # noqa: N802 - Spark's hook name
        """Start at batch 0."""
        return {"batch": 0}

    def latestOffset(self, start: dict[str, int], limit: ReadLimit) -> dict[str, int]:  # noqa: N802 - Spark's hook name
        """Offer batch 1 and stay there (the admission-controlled hook, as the loader's)."""
        return {"batch": 1}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[InputPartition]:
        """Return two partitions for the one batch."""
        return [InputPartition(index) for index in range(2)] if start != end else []

    def read(self, partition: InputPartition) -> Iterator[tuple[int]]:
        """Yield one row per partition."""
        yield (int(partition.value),)


class _OneBatchSource(DataSource):
    """A streaming source shaped like the loader's: Python planning, Python reads."""

    @classmethod
    def name(cls) -> str:
        """Return the format name."""
        return _FORMAT

    def schema(self) -> StructType:
        """Return the one-column schema."""
        return _SCHEMA

    def streamReader(self, schema: StructType) -> _OneBatchReader:  # noqa: N802 - Spark's hook name
        """Return the one-batch reader."""
        return _OneBatchReader()


def _collect(frame: DataFrame, batch_id: int) -> None:
    frame.collect()


def write_class_archive(path: Path, extra_conf: dict[str, str] | None = None) -> int:
    """Run a loader-shaped session, dump its JVM's classes to ``path``; return the bytes written.

    Raises:
        ConfigError: ``path`` cannot hold the archive (spaces, or its directory is missing).
        RuntimeError: the JVM exited without writing a complete archive.
    """
    check_archive_path(str(path))
    if not path.parent.is_dir():
        raise ConfigError(f"class archive: directory {path.parent} does not exist")
    partial = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.partial")
    settings = SparkSettings(
        app_name="plowline-class-archive",
        extra_conf=extra_conf or {},
        dump_class_archive=str(partial),
    )
    spark = build_spark_session(settings)
    gateway: Any = spark.sparkContext._gateway
    jvm = gateway.proc  # pyspark's Popen of the JVM it launched
    try:
        _exercise(spark)
    finally:
        spark.stop()
        jvm.stdin.close()  # the gateway JVM exits on end of input, dumping its classes
        jvm.wait(_JVM_EXIT_S)
    if jvm.returncode != 0 or not partial.is_file() or partial.stat().st_size == 0:
        partial.unlink(missing_ok=True)
        raise RuntimeError(f"the JVM exited ({jvm.returncode}) without a class archive")
    os.replace(partial, path)
    return path.stat().st_size


def _exercise(spark: Any) -> None:
    """Run one streaming micro-batch through a Python source into foreachBatch."""
    spark.dataSource.register(_OneBatchSource)
    with tempfile.TemporaryDirectory(prefix="plowline-class-archive-") as checkpoint:
        query = (
            spark.readStream.format(_FORMAT)
            .load()
            .writeStream.foreachBatch(_collect)
            .option("checkpointLocation", checkpoint)
            .start()
        )
        try:
            query.processAllAvailable()
        finally:
            query.stop()
