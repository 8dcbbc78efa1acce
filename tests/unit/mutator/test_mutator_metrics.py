"""The mutator's metrics exist from the start, so rate() sees its first mutations and errors."""

from __future__ import annotations

from plowline_mutator.metrics import ERROR_KINDS, SOURCES, MutatorMetrics
from plowline_mutator.mutation import Rejection
from prometheus_client.parser import text_string_to_metric_families


def _samples(metrics: MutatorMetrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = metrics.render().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if not s.name.endswith("_created")
    }


def test_fresh_metrics_export_every_source_and_error_kind_at_zero() -> None:
    """Before any request, each source's counters, latency count and every error kind read 0."""
    samples = _samples(MutatorMetrics())
    names = ("mutator_types_received_total", "mutator_columns_added_total")
    wanted = [(f"plowline_{n}", (("source", s),)) for n in names for s in SOURCES]
    wanted += [("plowline_mutator_mutation_seconds_count", (("source", s),)) for s in SOURCES]
    wanted += [
        ("plowline_mutator_errors_total", (("kind", k), ("source", s)))
        for s in SOURCES
        for k in ERROR_KINDS
    ]
    expected = dict.fromkeys(wanted, 0.0)
    assert expected == {key: samples.get(key) for key in wanted}


def test_every_rejection_kind_is_an_exported_error_kind() -> None:
    """A rejection's kind counts into a series that was there from the start."""
    missing = {kind.value for kind in Rejection} - set(ERROR_KINDS)
    assert set() == missing
