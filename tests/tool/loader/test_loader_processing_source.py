"""The processing source's planner processes stay light: the partition function travels unread."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from pathlib import Path

from plowline_core.schema.entity import ColumnMode
from plowline_loader.bootstrap import WorkerConfig, load_bigquery_config, task_processor
from plowline_loader.partition import StreamingPartition
from plowline_loader.source.processing import ProcessingStreamReader, processing_source
from pyspark import cloudpickle
from support.configs import bigquery_config

_CONFIG = bigquery_config(name="processing source test")
# What the planner processes must not import: the loader's transform and sinks.
_HEAVY = (
    "plowline_loader.partition",
    "plowline_loader.batch.processor",
    "plowline_loader.bootstrap",
)
_PLAN = """
import pickle, sys
source = pickle.loads(sys.stdin.buffer.read())
reader = source({"subscription": "projects/p/subscriptions/s"}).streamReader(source.row_schema)
reader.partitions({"batch": 0}, {"batch": 1})
pickle.loads(pickle.dumps(reader))
print(",".join(sorted(name for name in sys.modules if name in %r)))
"""


def _partition(tmp_path: Path) -> StreamingPartition:
    config_file = tmp_path / "config.json"
    config_file.write_text(json.dumps(_CONFIG))
    config = WorkerConfig(
        load_bigquery_config(config_file), "{}", str(tmp_path), ColumnMode.FULL, "0"
    )
    return StreamingPartition(config, task_processor)


def test_planning_imports_nothing_of_the_partition_function(tmp_path: Path) -> None:
    """Unpickling the source, planning and shipping its reader, as Spark's planner processes
    do, imports none of the partition function's modules."""
    source = processing_source("plowline-load", _partition(tmp_path))
    blob = cloudpickle.dumps(source)  # type: ignore[no-untyped-call]  # as Spark ships it

    planner = subprocess.run(
        [sys.executable, "-c", _PLAN % (_HEAVY,)], input=blob, capture_output=True, check=True
    )

    expected = ""
    assert expected == planner.stdout.decode().strip()


def test_the_reader_gives_back_the_partition_function(tmp_path: Path) -> None:
    """A reader shipped to a task unpickles the very partition function it was built with."""
    partition = _partition(tmp_path)
    source = processing_source("plowline-load", partition)
    reader = source({"subscription": "projects/p/subscriptions/s"}).streamReader(source.row_schema)
    shipped = pickle.loads(pickle.dumps(reader))

    assert isinstance(shipped, ProcessingStreamReader)
    assert partition == shipped.process
