"""The driver's py4j gateway: pyspark's NumPy converters asked only once NumPy is loaded.

py4j passes every argument of every call into the JVM through the input converters
registered in ``py4j.protocol.INPUT_CONVERTER``; pyspark registers two for NumPy
(``NumpyScalarConverter``, ``NumpyArrayConverter``). Their ``can_convert`` imports
``pyspark.testing.utils`` to learn whether NumPy is installed, and that module imports
pandas, pyarrow and NumPy: ~0.4 CPU-s in the driver, on the start's critical path, at the
session's first JVM call (``SparkConf``), for a driver that never hands the JVM a NumPy
value.

``ask_numpy_converters_lazily()`` wraps each of them in place: the wrapper asks the
wrapped converter only when NumPy is already imported and otherwise answers no. The
answers are the same: an object is a NumPy scalar or array only if NumPy is loaded.

Notes:
    Idempotent, and a no-op for converters it does not know (another pyspark's names):
    they stay as registered. pyspark's code is not changed; py4j's list is its documented
    extension point (``register_input_converter``).
"""

from __future__ import annotations

import sys
from typing import Any

from py4j import protocol  # type: ignore[import-untyped]  # no type hints

NUMPY_CONVERTERS = frozenset({"NumpyScalarConverter", "NumpyArrayConverter"})
"""pyspark's converters (``pyspark.sql.types``) whose questions import pandas."""


class NumpyWhenLoaded:
    """A py4j input converter that defers to ``inner`` only when NumPy is imported."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def can_convert(self, obj: object) -> bool:
        """Say whether ``inner`` converts ``obj`` (never, without NumPy loaded: not a NumPy value)."""
        return "numpy" in sys.modules and bool(self.inner.can_convert(obj))

    def convert(self, obj: object, gateway_client: Any) -> Any:
        """Convert ``obj`` as ``inner`` does."""
        return self.inner.convert(obj, gateway_client)


def ask_numpy_converters_lazily() -> int:
    """Wrap pyspark's NumPy converters in py4j's registered list; return how many were wrapped."""
    import pyspark.sql.types  # noqa: F401 - registers pyspark's converters on import

    converters: list[Any] = protocol.INPUT_CONVERTER
    wrapped = 0
    for index, converter in enumerate(converters):
        if type(converter).__name__ in NUMPY_CONVERTERS:
            converters[index] = NumpyWhenLoaded(converter)
            wrapped += 1
    return wrapped
