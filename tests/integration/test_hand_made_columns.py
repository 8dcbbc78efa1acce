"""An events table with hand-made columns of every type: the loader's batch processing keeps working.

An analyst adds BYTES, BIGNUMERIC, TIME, DATETIME, GEOGRAPHY, JSON, RANGE and INTERVAL
columns (one of them under the name the mutator would give an entity, and a RECORD of
such fields) to a fresh events table on the local stack (``hand_made_table``, in
``support.hand_made``). The loader's batch processing (the code Spark executors run, with
the real adapters) loads events in every write mode, and an event whose entity column is a
hand-made GEOGRAPHY becomes a failed insert (BigQuery refuses its value) while the others
land. The mutator and the repeater, as processes, beside the same columns are tested in
``tests/e2e/test_hand_made_columns.py``.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from plowline_core.schema.entity import ColumnMode
from plowline_core.testing.tsv import enriched_line
from plowline_loader.batch.message import InboundMessage
from plowline_loader.bootstrap import WorkerConfig, build_processor, load_bigquery_config
from support.hand_made import CHECKOUT, HAND_MADE, TypedTable, hand_made

CHECKOUT_DATA = {"cartId": "c1", "itemCount": 2, "total": 9.5, "currency": "EUR"}


@pytest.mark.parametrize(
    "load",
    [
        pytest.param({"mode": "STREAMING_INSERTS", "retry": False}, id="insert-all"),
        pytest.param({"mode": "STORAGE_WRITE_API", "stream": "default"}, id="write-api"),
        pytest.param({"mode": "FILE_LOADS", "frequency": 100}, id="file-loads"),
    ],
)
def test_loader_loads_beside_hand_made_columns(
    hand_made_table: TypedTable, load: dict[str, Any]
) -> None:
    """A batch lands its good event; the clashing entity is a failed insert, garbage a bad row."""
    typed = hand_made_table
    stack = typed.stack
    config = WorkerConfig(
        bigquery=load_bigquery_config(typed.config_file(load)),
        resolver_json=typed.resolver_file.read_text(),
        resolver_dir=str(typed.root),
        column_mode=ColumnMode.FULL,
        version="0.1.0",
        pubsub_emulator_host=stack.endpoints.pubsub_target,
        bigquery_emulator_host=stack.endpoints.bigquery_url,
        bigquery_grpc_host=stack.endpoints.bigquery_grpc_target,
        storage_emulator_host=stack.endpoints.storage_url,
        staging_bucket=sorted(stack.config.buckets)[0],
    )
    good, clashing = str(uuid.uuid4()), str(uuid.uuid4())
    lines = [
        enriched_line(event_id=good),
        enriched_line(event_id=clashing, unstruct_event=(CHECKOUT, CHECKOUT_DATA)),
        "not an enriched event",
    ]
    messages = [InboundMessage(line.encode(), f"m{i}") for i, line in enumerate(lines)]

    outcome = build_processor(config).process(messages)

    expected = ((1, 1, 1), {good}, HAND_MADE)
    actual = (
        (outcome.good, outcome.failed, outcome.bad),
        typed.event_ids(),
        hand_made(typed.columns()),
    )
    assert expected == actual
