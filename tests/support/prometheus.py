"""Reading a Prometheus ``/metrics`` page: the sample names it declares."""

from __future__ import annotations

import re

_SUFFIXES = {
    "counter": ("_total",),
    "histogram": ("_bucket", "_sum", "_count"),
    "gauge": ("",),
}


def exported_names(text: str) -> set[str]:
    """Return the sample names a /metrics page declares.

    Labelled metrics without samples yet still declare their ``# TYPE``, so names are read
    from the declarations and expanded to the samples each type exposes (``_total``;
    ``_bucket``/``_sum``/``_count``).
    """
    names = set()
    for name, kind in re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M):
        base = name.removesuffix("_total") if kind == "counter" else name
        names.update(base + suffix for suffix in _SUFFIXES.get(kind, ("",)))
    return names
