"""BatchHistogram counts batches of observations and exposes what prometheus_client's
Histogram exposes for the same observations, sample for sample."""

from __future__ import annotations

import math

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from plowline_cloud.metrics import BatchHistogram, MetricsRegistry
from prometheus_client import CollectorRegistry, Histogram
from prometheus_client.samples import Sample

BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 300.0, 3600.0)
_values = st.floats(allow_nan=False, width=64)
_batches = st.lists(st.lists(_values, max_size=30), max_size=6)


def _samples(registry: CollectorRegistry) -> dict[tuple[str, str], float]:
    """Every sample of the registry but ``_created``, keyed by name and ``le``."""
    found: dict[tuple[str, str], float] = {}
    for family in registry.collect():
        for sample in family.samples:
            if not sample.name.endswith("_created"):
                found[(sample.name, sample.labels.get("le", ""))] = sample.value
    return found


_Samples = dict[tuple[str, str], float]


def _both(batches: list[list[float]]) -> tuple[_Samples, _Samples]:
    """The samples of a Histogram fed value by value and of a BatchHistogram fed batch by batch."""
    reference = CollectorRegistry()
    histogram = Histogram("latency_seconds", "doc", buckets=BUCKETS, registry=reference)
    ours = CollectorRegistry()
    batched = BatchHistogram("latency_seconds", "doc", BUCKETS)
    ours.register(batched)
    for batch in batches:
        for value in batch:
            histogram.observe(value)
        batched.observe_many(batch)
    return _samples(reference), _samples(ours)


def _same(expected: float, actual: float) -> bool:
    if math.isnan(expected) or math.isnan(actual):
        return math.isnan(expected) and math.isnan(actual)
    return math.isclose(expected, actual, rel_tol=1e-9, abs_tol=1e-9)


@given(_batches)
@example([[1.797e308], [-1.797e308, 1.0]])  # sums must add in order: floats do not associate
def test_batch_histogram_exposes_what_histogram_exposes(batches: list[list[float]]) -> None:
    expected, actual = _both(batches)
    assert expected.keys() == actual.keys()
    for key, value in expected.items():
        assert _same(value, actual[key]), (key, value, actual[key])


def test_batch_histogram_counts_each_bound_in_its_own_bucket() -> None:
    """A value equal to a bound is in that bound's bucket (``le`` means ≤)."""
    expected, actual = _both([[0.05, 0.1, 0.1000001, 3600.0, 3600.5, -1.0]])
    assert actual == expected
    assert actual[("latency_seconds_bucket", "0.05")] == 2.0  # -1.0 and 0.05
    assert actual[("latency_seconds_bucket", "0.1")] == 3.0
    assert actual[("latency_seconds_bucket", "3600.0")] == 5.0
    assert actual[("latency_seconds_bucket", "+Inf")] == 6.0


def test_batch_histogram_treats_nan_as_histogram_does() -> None:
    """A NaN is in no bucket and makes the sum NaN; the other values still count."""
    expected, actual = _both([[0.2, math.nan, 7.0], [math.inf, -math.inf]])
    assert expected.keys() == actual.keys()
    for key, value in expected.items():
        assert _same(value, actual[key]), key
    assert actual[("latency_seconds_count", "")] == 4.0


def test_batch_histogram_exposes_its_creation_time() -> None:
    registry = CollectorRegistry()
    registry.register(BatchHistogram("latency_seconds", "doc", BUCKETS))
    (family,) = registry.collect()
    created = [s for s in family.samples if s.name == "latency_seconds_created"]
    assert len(created) == 1
    assert isinstance(created[0], Sample)
    assert created[0].value > 0


def test_batch_histogram_refuses_buckets_without_a_finite_bound() -> None:
    with pytest.raises(ValueError, match="finite bucket bounds"):
        BatchHistogram("latency_seconds", "doc", (math.inf,))


def test_registry_renders_a_batch_histogram_under_its_namespace() -> None:
    metrics = MetricsRegistry("loader")
    histogram = metrics.batch_histogram("loader_publish_to_insert_seconds", "doc", BUCKETS)
    histogram.observe_many([0.2, 0.3, 4.0])
    text = metrics.render().decode()
    assert 'plowline_loader_publish_to_insert_seconds_bucket{le="0.25"} 1.0' in text
    assert 'plowline_loader_publish_to_insert_seconds_bucket{le="+Inf"} 3.0' in text
    assert "plowline_loader_publish_to_insert_seconds_count 3.0" in text
    assert "# TYPE plowline_loader_publish_to_insert_seconds histogram" in text


def test_registry_refuses_a_second_metric_of_the_same_name() -> None:
    metrics = MetricsRegistry("loader")
    metrics.batch_histogram("latency_seconds", "doc", BUCKETS)
    with pytest.raises(ValueError, match="already registered"):
        metrics.batch_histogram("latency_seconds", "doc", BUCKETS)
