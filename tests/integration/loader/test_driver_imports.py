"""The loader's driver process: what a session's start imports in it (the start-up's CPU)."""

from __future__ import annotations

import json
import subprocess
import sys

_SESSION = """
import json, sys
from plowline_loader.spark.session import SparkSettings, build_spark_session
spark = build_spark_session(SparkSettings(app_name="driver-imports"))
count = spark.range(3).count()
print(json.dumps({
    "count": count,
    "loaded": [name for name in ("numpy", "pandas", "pyarrow") if name in sys.modules],
}))
spark.stop()
"""


def test_starting_a_session_imports_neither_pandas_nor_numpy_in_the_driver() -> None:
    """A driver that builds the loader's session and runs a job has not imported pandas, NumPy
    or pyarrow (pyspark's NumPy converters would import all three at the first JVM call)."""
    done = subprocess.run(
        [sys.executable, "-c", _SESSION], capture_output=True, text=True, timeout=300, check=True
    )

    expected = {"count": 3, "loaded": []}
    assert expected == json.loads(done.stdout.splitlines()[-1])
