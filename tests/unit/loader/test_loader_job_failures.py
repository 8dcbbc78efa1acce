"""A failed Spark job (an executor lost under a shuffle) is retried a few times, then fails the query."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from plowline_core.schema.entity import ColumnMode
from plowline_loader.bootstrap import WorkerConfig, load_bigquery_config
from plowline_loader.health import Readiness
from plowline_loader.partition import StreamingPartition
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
    return BatchWriter(StreamingPartition(config), settings, Readiness())


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
