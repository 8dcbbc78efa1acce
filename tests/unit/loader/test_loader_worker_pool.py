"""The warm-up's worker preparation: a config it cannot build from is a reason, not an error."""

from __future__ import annotations

from typing import Any

from plowline_core.config import BigQueryConfig
from plowline_core.schema.entity import ColumnMode
from plowline_loader.bootstrap import WorkerConfig
from plowline_loader.worker_pool import prepare_worker

_SCHEMA = "iglu:com.snowplowanalytics.snowplow.storage/bigquery_config/jsonschema/1-0-0"
_DATA = {
    "name": "warm-up test", "id": "31b1559d-d319-4023-aaae-97698238d808",
    "projectId": "p", "datasetId": "d", "tableId": "events", "input": "input-sub",
    "typesTopic": "types", "typesSubscription": "types-sub", "badRows": "bad",
    "failedInserts": "failed", "load": {"mode": "STREAMING_INSERTS", "retry": False},
    "purpose": "ENRICHED_EVENTS",
}  # fmt: skip


def _unbuildable(load: dict[str, Any]) -> WorkerConfig:
    """Return a config for ``load`` whose resolver is not JSON (no processor can be built)."""
    return WorkerConfig(
        BigQueryConfig.parse({"schema": _SCHEMA, "data": {**_DATA, "load": load}}),
        "{not json",
        ".",
        ColumnMode.FULL,
        "0.1.0",
        pubsub_emulator_host="127.0.0.1:9",
        bigquery_emulator_host="http://127.0.0.1:9",
    )


def test_a_config_the_worker_cannot_build_from_is_returned_as_the_reason() -> None:
    """A resolver that is not JSON makes the preparation return the ConfigError's text (the
    first batch will meet and report it), not raise in the warm-up job."""
    reason = prepare_worker(_unbuildable({"mode": "STREAMING_INSERTS", "retry": False}))

    assert reason.startswith("ConfigError: --resolver: not JSON")


def test_exactly_once_workers_prepare_the_reads_only() -> None:
    """In exactly-once mode the warmed workers only read (the processor runs after the
    shuffle, in other workers): no processor is built, so the unbuildable one goes unnoticed."""
    load = {"mode": "STORAGE_WRITE_API", "stream": "exactly-once", "retry": False}

    expected = ""
    assert expected == prepare_worker(_unbuildable(load))
