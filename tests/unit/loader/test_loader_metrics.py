"""The loader's metrics count a batch's outcome, latencies included, in one record call."""

from __future__ import annotations

from plowline_cloud.metrics import MetricsRegistry
from plowline_core.ports import InsertReason
from plowline_loader.batch.outcome import BatchOutcome
from plowline_loader.metrics import LoaderMetrics


def _value(text: str, sample: str) -> float:
    for line in text.splitlines():
        if line.startswith(sample + " "):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"no sample {sample} in:\n{text}")


def test_record_counts_every_rows_latencies() -> None:
    metrics = LoaderMetrics.create(MetricsRegistry("loader"))
    outcome = BatchOutcome(
        events_in=3, good=3, collector_latency_s=(0.2, 0.7, 40.0), publish_latency_s=(0.04, 0.3)
    )
    metrics.record(outcome)
    metrics.record(BatchOutcome(events_in=1, good=1, publish_latency_s=(0.04,)))
    text = metrics.registry.render().decode()
    collector = "plowline_loader_collector_to_insert_seconds"
    publish = "plowline_loader_publish_to_insert_seconds"
    assert _value(text, f'{collector}_bucket{{le="0.25"}}') == 1.0
    assert _value(text, f'{collector}_bucket{{le="1.0"}}') == 2.0
    assert _value(text, f'{collector}_bucket{{le="60.0"}}') == 3.0
    assert _value(text, f"{collector}_count") == 3.0
    assert _value(text, f"{collector}_sum") == 40.9
    assert _value(text, f'{publish}_bucket{{le="0.05"}}') == 2.0
    assert _value(text, f"{publish}_count") == 3.0
    assert _value(text, "plowline_loader_events_in_total") == 4.0


def test_failed_inserts_of_every_reason_are_exported_from_the_start() -> None:
    """Before any batch, failed inserts read 0 for each reason, so rate() sees the first ones."""
    text = LoaderMetrics.create(MetricsRegistry("loader")).registry.render().decode()
    found = {
        reason.value: _value(text, f'plowline_loader_failed_inserts_total{{reason="{reason}"}}')
        for reason in InsertReason
    }
    expected = dict.fromkeys((reason.value for reason in InsertReason), 0.0)
    assert expected == found
