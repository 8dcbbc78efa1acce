"""Events held for a missing Iglu schema (exitOnMissingIgluSchema) show on /metrics."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest
from plowline_cloud.metrics import MetricsRegistry
from plowline_core.schema.entity import ColumnMode
from plowline_loader.batch.outcome import BatchOutcome
from plowline_loader.bootstrap import WorkerConfig, load_bigquery_config, task_processor
from plowline_loader.health import Readiness
from plowline_loader.metrics import MISSING_SCHEMA_LABELS, LoaderMetrics
from plowline_loader.partition import PartitionReport, StreamingPartition
from plowline_loader.streaming import BatchWriter, StreamSettings
from support.spark_frame import AttemptTags

MISSING = "iglu:com.acme/missing/jsonschema/1-0-0"
_CONFIG = {
    "schema": "iglu:com.snowplowanalytics.snowplow.storage/bigquery_config/jsonschema/1-0-0",
    "data": {
        "name": "unit", "id": "31b1559d-d319-4023-aaae-97698238d808", "projectId": "plowline-local",
        "datasetId": "snowplow", "tableId": "events", "input": "enriched-loader", "typesTopic": "types",
        "typesSubscription": "types-mutator", "badRows": "bad-rows",
        "failedInserts": "failed-inserts", "load": {"mode": "STREAMING_INSERTS", "retry": False},
        "purpose": "ENRICHED_EVENTS",
    },
}  # fmt: skip


class ReportFrame(AttemptTags):
    """A micro-batch whose one action returns the given partition reports as rows."""

    def __init__(self, *reports: PartitionReport) -> None:
        self.rows = [{"report": pickle.dumps(report)} for report in reports]
        super().__init__()

    def collect(self) -> list[dict[str, bytes]]:
        """Return the rows a processing source's batch would."""
        return self.rows


def _held(schemas: frozenset[str], ids: tuple[str, ...]) -> PartitionReport:
    return PartitionReport(BatchOutcome(held_ids=frozenset(ids), held_schemas=schemas))


def _writer(tmp_path: Path, metrics: LoaderMetrics) -> BatchWriter:
    config_file = tmp_path / "config.json"
    config_file.write_text(json.dumps(_CONFIG))
    config = WorkerConfig(
        load_bigquery_config(config_file), "{}", str(tmp_path), ColumnMode.FULL, "0"
    )
    settings = StreamSettings(str(tmp_path / "cp"), backoff_initial_s=0.0, backoff_max_s=0.0)
    return BatchWriter(StreamingPartition(config, task_processor), settings, Readiness(), metrics)


def _samples(metrics: LoaderMetrics) -> dict[str, float]:
    text = metrics.registry.render().decode()
    return {
        line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith(("plowline_loader_held_events", "plowline_loader_missing_schema"))
    }


def test_a_batch_holding_events_shows_them_and_their_schema(tmp_path: Path) -> None:
    """Three events held for one schema: /metrics reads 3 held and that schema at 1."""
    metrics = LoaderMetrics.create(MetricsRegistry("loader"))
    frame = ReportFrame(_held(frozenset({MISSING}), ("a", "b")), _held(frozenset(), ("c",)))

    _writer(tmp_path, metrics)(frame, 0)  # type: ignore[arg-type]

    expected = {
        "plowline_loader_held_events": 3.0,
        f'plowline_loader_missing_schema{{schema="{MISSING}"}}': 1.0,
    }
    assert expected == _samples(metrics)


def test_a_schema_no_longer_missing_leaves_the_metrics(tmp_path: Path) -> None:
    """The next batch holds nothing: held reads 0 and the schema's series is gone."""
    metrics = LoaderMetrics.create(MetricsRegistry("loader"))
    writer = _writer(tmp_path, metrics)
    writer(ReportFrame(_held(frozenset({MISSING}), ("a",))), 0)  # type: ignore[arg-type]

    writer(ReportFrame(PartitionReport()), 1)  # type: ignore[arg-type]

    expected = {"plowline_loader_held_events": 0.0}
    assert expected == _samples(metrics)


@pytest.mark.parametrize(
    ("missing", "expected"),
    [
        pytest.param(MISSING_SCHEMA_LABELS, MISSING_SCHEMA_LABELS, id="all-named"),
        pytest.param(MISSING_SCHEMA_LABELS + 5, MISSING_SCHEMA_LABELS + 1, id="rest-as-other"),
    ],
)
def test_the_schema_label_is_bounded(missing: int, expected: int) -> None:
    """However many schemas are missing, at most MISSING_SCHEMA_LABELS + other series exist."""
    metrics = LoaderMetrics.create(MetricsRegistry("loader"))
    schemas = frozenset(f"iglu:com.acme/s{n}/jsonschema/1-0-0" for n in range(missing))

    metrics.holding(schemas, missing)

    series = [k for k in _samples(metrics) if k.startswith("plowline_loader_missing_schema")]
    assert expected == len(series)
