"""The streaming loader in each ``load.mode`` on the local stack: every event lands once.

Each test gets a fresh events table (atomic columns) and input subscription
(``mode_rig``), so the table's ``COUNT(*)`` and ``COUNT(DISTINCT event_id)`` are this test's alone. Events carry
no entities: the Iglu resolver is never asked (an empty embedded repository suffices).
STREAMING_INSERTS is covered by ``test_loader_streaming.py``; the loader run as a process,
SIGKILLed in exactly-once mode, by ``tests/e2e/loader/test_loader_write_modes.py``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from plowline_cloud.clients import bigquery_client
from plowline_loader.streaming import StreamingLoader, StreamSettings
from pyspark.sql import SparkSession

if TYPE_CHECKING:
    from support.loader_rigs import ModeRig

EVENTS_PER_MODE = 10_000


@pytest.mark.parametrize(
    "load",
    [
        pytest.param({"mode": "STORAGE_WRITE_API", "stream": "default"}, id="write-api-default"),
        pytest.param(
            {"mode": "STORAGE_WRITE_API", "stream": "exactly-once"}, id="write-api-exactly-once"
        ),
        pytest.param({"mode": "FILE_LOADS", "frequency": 100}, id="file-loads"),
    ],
)
def test_every_event_lands_once(
    spark: SparkSession,
    mode_rig: Callable[[dict[str, Any]], ModeRig],
    load: dict[str, Any],
) -> None:
    """10,000 events streamed through the loader in this mode are each in the table once."""
    rig = mode_rig(load)
    rig.publish([str(uuid.uuid4()) for _ in range(EVENTS_PER_MODE)])
    loader, _ = rig.load_backlog(spark, max_messages=2500)

    expected = (EVENTS_PER_MODE, EVENTS_PER_MODE, EVENTS_PER_MODE)
    assert expected == (loader.writer.totals.good, *rig.counts())


def test_file_loads_start_one_load_job_per_partition_per_window(
    spark: SparkSession, mode_rig: Callable[[dict[str, Any]], ModeRig], tmp_path: Path
) -> None:
    """2,000 events in FILE_LOADS: one load job per micro-batch partition, not one per 500 rows."""
    rig = mode_rig({"mode": "FILE_LOADS", "frequency": 100})
    rig.publish([str(uuid.uuid4()) for _ in range(2_000)])
    settings = StreamSettings(
        checkpoint=str(tmp_path / "checkpoint"),
        partitions=1,
        max_messages=5_000,
        pull_timeout_s=0.5,
        ack_deadline_s=30,
        lease_interval_s=5.0,
        backoff_max_s=2.0,
    )
    loaded: list[int] = []  # events per micro-batch (one partition each)
    observer = lambda outcome: loaded.append(outcome.events_in) if outcome.events_in else None  # noqa: E731
    loader = StreamingLoader(spark, rig.config(), settings, observer=observer)
    query = loader.start()
    try:
        query.processAllAvailable()
    finally:
        loader.stop(30)

    client = bigquery_client(rig.stack.project, rig.stack.endpoints.bigquery_url)
    table_id = rig.table_ref.rsplit(".", 1)[1]
    jobs = [
        job
        for job in client.list_jobs(all_users=True)
        if job.job_type == "load" and job.destination.table_id == table_id
    ]
    assert (sum(loaded), len(jobs), rig.counts()) == (2_000, len(loaded), (2_000, 2_000))
    assert max(loaded) > 500, "a batch must hold more than one old 500-row chunk to tell"
