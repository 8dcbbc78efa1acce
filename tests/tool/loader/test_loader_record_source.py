"""The ``pubsub-records`` source: its options, and planner processes that stay light."""

from __future__ import annotations

import pickle
import subprocess
import sys

import pytest
from plowline_core.errors import ConfigError
from plowline_loader.compressed_input import DEFAULT_DECOMPRESSION, Decompression
from plowline_loader.source.record_source import RecordDataSource, RecordSourceOptions
from pyspark import cloudpickle

SUBSCRIPTION = "projects/p/subscriptions/s"
# What the planner processes must not import: the batch opener and the transform's modules.
_HEAVY = (
    "plowline_loader.record_split",
    "plowline_loader.compressed_input",
    "plowline_core.event.parser",
    "zstandard",
)
_PLAN = """
import pickle, sys
source = pickle.loads(sys.stdin.buffer.read())
options = {"subscription": "projects/p/subscriptions/s", "maxBytesInBatch": "1000"}
reader = source(options).streamReader(source.row_schema)
reader.partitions({"batch": 0}, {"batch": 1})
pickle.loads(pickle.dumps(reader))
print(",".join(sorted(name for name in sys.modules if name in %r)))
"""


def test_planning_imports_nothing_of_the_batch_opener() -> None:
    """Unpickling the source, planning and shipping its reader import no decompression."""
    blob = cloudpickle.dumps(RecordDataSource)  # type: ignore[no-untyped-call]  # as Spark ships it

    planner = subprocess.run(
        [sys.executable, "-c", _PLAN % (_HEAVY,)], input=blob, capture_output=True, check=True
    )

    expected = ""
    assert expected == planner.stdout.decode().strip()


def test_the_decompression_options_reach_the_reader() -> None:
    """``maxBytesSinglePayload`` and ``maxBytesInBatch`` set the reader's decompression."""
    options = {"subscription": SUBSCRIPTION, "maxBytesSinglePayload": "10", "maxBytesInBatch": "20"}
    reader = RecordDataSource(options).streamReader(RecordDataSource.row_schema)
    shipped = pickle.loads(pickle.dumps(reader))
    assert Decompression(10, 20) == shipped.options.decompression


def test_without_decompression_options_the_defaults_are_2x() -> None:
    """No decompression option: 2.x's defaults, and every ``pubsub`` option as parsed there."""
    options = RecordSourceOptions.parse({"subscription": SUBSCRIPTION, "numPartitions": "3"})
    expected = (DEFAULT_DECOMPRESSION, 3)
    assert expected == (options.decompression, options.num_partitions)


@pytest.mark.parametrize(
    "option",
    [
        pytest.param({"maxBytesInBatch": "0"}, id="zero"),
        pytest.param({"maxBytesSinglePayload": "ten"}, id="not-a-number"),
        pytest.param({"numPartitions": "0"}, id="a-pubsub-option"),
    ],
)
def test_a_bad_option_is_a_config_error(option: dict[str, str]) -> None:
    """A decompression option under 1 or not a number, or a bad ``pubsub`` option, is refused."""
    with pytest.raises(ConfigError):
        RecordSourceOptions.parse({"subscription": SUBSCRIPTION, **option})
