"""A failed Spark job (an executor lost under a shuffle) is retried a few times, then fails the query."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from plowline_core.schema.entity import ColumnMode
from plowline_loader import streaming
from plowline_loader.bootstrap import WorkerConfig, load_bigquery_config, task_processor
from plowline_loader.health import Readiness
from plowline_loader.partition import PartitionReport, StreamingPartition
from plowline_loader.source.pulls import ATTEMPT_PROPERTY
from plowline_loader.streaming import MAX_JOB_FAILURES, BatchWriter, StreamSettings
from pyspark.errors.exceptions.captured import CapturedException
from support.configs import bigquery_config
from support.spark_frame import AttemptTags

_ABORTED = "Job aborted due to stage failure: A shuffle map stage with indeterminate output"
_CONFIG = bigquery_config(name="unit")


class JobAborted(CapturedException):
    """What PySpark raises when Spark aborts a job (built without a JVM)."""

    def __init__(self) -> None:
        Exception.__init__(self, _ABORTED)

    def __str__(self) -> str:
        return _ABORTED


class FailingFrame(AttemptTags):
    """A micro-batch whose one action fails ``failures`` times, then returns no report."""

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures
        self.actions = 0

    def collect(self) -> list[object]:
        """Fail as Spark does when it aborts the job, until the failures are used up."""
        self.actions += 1
        if self.actions <= self.failures:
            raise JobAborted()
        return []


def _writer(tmp_path: Path) -> BatchWriter:
    config_file = tmp_path / "config.json"
    config_file.write_text(json.dumps(_CONFIG))
    config = WorkerConfig(
        load_bigquery_config(config_file), "{}", str(tmp_path), ColumnMode.FULL, "0"
    )
    settings = StreamSettings(str(tmp_path / "cp"), backoff_initial_s=0.0, backoff_max_s=0.0)
    return BatchWriter(StreamingPartition(config, task_processor), settings, Readiness())


def test_a_failed_job_is_run_again(tmp_path: Path) -> None:
    """Two aborted jobs in a row: the batch runs its action again, tagged as a retry, and completes."""
    writer, frame = _writer(tmp_path), FailingFrame(failures=2)

    writer(frame, 0)  # type: ignore[arg-type]

    attempts = [(ATTEMPT_PROPERTY, str(attempt)) for attempt in range(3)]
    assert (frame.actions, writer.job_failures, frame.tags) == (3, 2, attempts)


def test_a_job_that_keeps_failing_fails_the_query(tmp_path: Path) -> None:
    """One failure more than MAX_JOB_FAILURES propagates, as a bug in the tasks should."""
    writer, frame = _writer(tmp_path), FailingFrame(failures=MAX_JOB_FAILURES + 1)

    with pytest.raises(CapturedException, match="Job aborted"):
        writer(frame, 0)  # type: ignore[arg-type]


class KeyedFrame(AttemptTags):
    """An exactly-once micro-batch: its action's first attempt fails part-way, the second
    goes through; it keeps the ids each attempt's partition function was told to skip."""

    def __init__(self) -> None:
        super().__init__()
        self.skipped: list[frozenset[str]] = []

    @property
    def rdd(self) -> KeyedFrame:
        """Stand in for the frame's RDD."""
        return self

    def mapPartitions(self, function: Any) -> KeyedFrame:
        """Note what the partition function skips; its reports come from ``collect``."""
        self.skipped.append(function.__self__.skip)
        return self

    def collect(self) -> list[PartitionReport]:
        """The first attempt: m1 durable, then a transient error; the second: done."""
        if len(self.skipped) == 1:
            return [PartitionReport(transient_error="insert: 503", durable_ids=("m1", "m2#0"))]
        return [PartitionReport()]


def test_a_retried_exactly_once_action_skips_what_the_first_made_durable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 37, finding 6: the retried action's tasks skip the ids the first attempt made
    durable, so their bad rows are not published again nor their events counted again."""
    config_file = tmp_path / "config.json"
    load = {"mode": "STORAGE_WRITE_API", "stream": "exactly-once"}
    config_file.write_text(json.dumps(bigquery_config(name="unit", load=load)))
    config = WorkerConfig(
        load_bigquery_config(config_file), "{}", str(tmp_path), ColumnMode.FULL, "0"
    )
    settings = StreamSettings(str(tmp_path / "cp"), backoff_initial_s=0.0, backoff_max_s=0.0)
    writer, frame = (
        BatchWriter(StreamingPartition(config, task_processor), settings, Readiness()),
        KeyedFrame(),
    )
    # The keying is a Spark expression (no JVM in the unit tier); what is tested is the retry.
    monkeypatch.setattr(streaming, "by_event_id", lambda frame, _partitions: frame)

    writer(frame, 0)  # type: ignore[arg-type]

    assert [frozenset(), frozenset({"m1", "m2#0"})] == frame.skipped
