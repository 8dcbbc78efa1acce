"""The driver's py4j converters: pyspark's NumPy ones asked only once NumPy is loaded."""

from __future__ import annotations

import json
import subprocess
import sys

_WITHOUT_NUMPY = """
import json, sys
from py4j import protocol
from plowline_loader.spark.converters import NumpyWhenLoaded, ask_numpy_converters_lazily
wrapped = [ask_numpy_converters_lazily(), ask_numpy_converters_lazily()]
answers = [c.can_convert(v) for c in protocol.INPUT_CONVERTER if isinstance(c, NumpyWhenLoaded)
           for v in (1, 2.5, "text", [1, 2])]
print(json.dumps({
    "wrapped": wrapped,
    "answers": answers,
    "loaded": [name for name in ("numpy", "pandas", "pyarrow") if name in sys.modules],
}))
"""


def test_without_numpy_the_converters_answer_no_and_import_nothing() -> None:
    """In a fresh driver both NumPy converters are wrapped once (a second call wraps none) and
    answer no to plain values without importing NumPy, pandas or pyarrow."""
    done = subprocess.run(
        [sys.executable, "-c", _WITHOUT_NUMPY],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )

    expected = {"wrapped": [2, 0], "answers": [False] * 8, "loaded": []}
    assert expected == json.loads(done.stdout)


def test_with_numpy_loaded_the_wrapped_converters_answer_as_pyspark_s() -> None:
    """Once NumPy is imported, each wrapper gives its pyspark converter's answer for NumPy
    arrays and scalars and for plain values alike."""
    import numpy as np
    from plowline_loader.spark.converters import NumpyWhenLoaded
    from pyspark.sql.types import NumpyArrayConverter, NumpyScalarConverter

    values = [np.array([1, 2]), np.array([[1]]), np.int64(3), np.float32(1.5), 3, [1], "x"]
    inners = [NumpyArrayConverter(), NumpyScalarConverter()]

    expected = [[inner.can_convert(value) for value in values] for inner in inners]
    actual = [[NumpyWhenLoaded(inner).can_convert(value) for value in values] for inner in inners]
    assert expected == actual
