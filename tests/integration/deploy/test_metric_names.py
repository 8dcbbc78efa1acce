"""How the metric-names check reads a /metrics page: the names its ``# TYPE`` lines declare.

The check itself, the four services running as processes with every ``plowline_*`` name
the dashboard and the alert rules query among those exported, is an e2e test
(``tests/e2e/deploy/test_metric_names.py``). Here is only its reader,
``support.prometheus.exported_names``: labelled metrics without samples yet still declare
their ``# TYPE``, so names are read from the declarations and expanded to the samples each
type exposes (``_total``; ``_bucket``/``_sum``/``_count``).
"""

from __future__ import annotations

from support.prometheus import exported_names


def test_exported_names_expand_declared_types() -> None:
    """A declared counter and histogram expand to the samples Prometheus stores."""
    page = "# TYPE plowline_x_total counter\n# TYPE plowline_y_seconds histogram\n"
    expected = {
        "plowline_x_total",
        "plowline_y_seconds_bucket",
        "plowline_y_seconds_sum",
        "plowline_y_seconds_count",
    }
    assert expected == exported_names(page)
