"""The Python workers of the loader's session: forked by the loader's daemon, pyspark unzipped."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator

from pyspark import cloudpickle
from pyspark.sql import SparkSession

cloudpickle.register_pickle_by_value(sys.modules[__name__])


def _describe(rows: Iterable[int]) -> Iterator[tuple[str, str]]:
    """Yield, from inside a Python worker, where pyspark came from and which daemon forked it."""
    import pyspark

    daemon = sys.modules["__main__"].__spec__
    yield (str(pyspark.__file__), daemon.name if daemon is not None else "")


def test_workers_import_the_installed_pyspark_and_come_from_the_loaders_daemon(
    spark: SparkSession,
) -> None:
    """A task's worker imported pyspark from the installed package (not Spark's pyspark.zip,
    which Python cannot keep bytecode for) and was forked by plowline_loader.spark.worker_daemon."""
    import pyspark

    found = spark.sparkContext.parallelize([0, 1], 2).mapPartitions(_describe).collect()

    expected = [(str(pyspark.__file__), "plowline_loader.spark.worker_daemon")] * 2
    assert expected == found
