"""Load rows with BigQuery load jobs from NDJSON objects staged in GCS (``load.mode: FILE_LOADS``).

Notes:
    ``insert`` stages and loads synchronously: it returns only when the rows are in the
    table (the job finished) or were reported as failures, so the caller may ack on
    return. Snowplow's ``frequency`` (seconds) is the loader's batching window: the
    loader collects rows for ``frequency`` seconds and calls ``insert`` once per window
    and partition (load jobs are quota'd per table per day; one per window fits).
    A load job is all or nothing. A failed job is retried once when its errors are
    transient; otherwise the rows are routed one by one through ``fallback`` (insertAll
    in production), which reports each bad row as an ``InsertFailure``: a bad row never
    stalls the others. Rows naming fields the table lacks are never staged
    (``UNKNOWN_FIELD`` after one refresh).
    A job once created is waited on until BigQuery reports it ``DONE``, however long it
    runs: a slow job is never taken for a failed one (giving up on it and loading the
    chunk again would load its rows twice). jobs.get is polled with a bounded back-off
    (``_poll_delay``, at most ``_LONGEST_POLL`` seconds, the sleep injectable); a jobs.get
    that fails transiently, even past the client's retry budget, is polled again, and one
    refused for good (a 4xx) raises without touching the job or its staged object.
    ``timeout`` bounds each HTTP call and is how often a job still running is logged;
    it is never a deadline for the job.
    Staged objects are deleted only once the job is ``DONE`` (BigQuery may read its
    source at any time while the job runs), or when jobs.insert failed (taken as no job
    created); best effort: a delete that fails (a retention policy, no
    ``storage.objects.delete``, GCS down) is logged and the object left behind (give the
    bucket a lifecycle rule that deletes old objects; it also removes the objects of jobs
    whose jobs.get was refused). It never turns a load that landed into an error: the
    partition would be redelivered and loaded again, for ever while the delete kept
    failing.
    Each job has an id of ours (``plowline-load-…``): when jobs.insert was applied but
    its response lost, the client's retry gets 409 ``duplicate`` (BigQuery's client
    resolves that for query jobs only); the job is then fetched by its id and waited on,
    so the rows load once.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Sequence
from contextlib import suppress
from datetime import UTC, datetime
from typing import Any, cast

import structlog
from google.api_core import exceptions as gexc
from google.cloud import bigquery
from google.cloud.bigquery.retry import DEFAULT_RETRY
from plowline_core.errors import PlowlineError, TransientError
from plowline_core.ports import InsertFailure, Row, RowSink, TableSchemaStore
from plowline_core.schema.field import FieldType

from plowline_cloud.errors import translated
from plowline_cloud.table_schema import table_reference
from plowline_cloud.write_api import check_fields

_log = structlog.get_logger("plowline.load_jobs")
_TRANSIENT_REASONS = frozenset({"backendError", "internalError", "rateLimitExceeded", "timeout"})
_FIRST_POLL = 0.5
_POLL_GROWTH = 1.5
_LONGEST_POLL = 10.0


class FileLoadSink:
    """Stage rows as NDJSON in a bucket and load them with a load job (satisfies ``RowSink``)."""

    def __init__(
        self,
        bq_client: bigquery.Client,
        storage_client: Any,
        bucket: str,
        table_ref: str | bigquery.TableReference,
        schema_store: TableSchemaStore,
        fallback: RowSink,
        *,
        prefix: str = "plowline-loads",
        timeout: float = 300.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._bq = bq_client
        self._bucket = storage_client.bucket(bucket)
        self._bucket_name = bucket
        self._table = table_reference(bq_client, table_ref)
        self._schema = schema_store
        self._fallback = fallback
        self._prefix = prefix.strip("/")
        self._timeout = timeout
        self._sleep = sleep
        self._retry = DEFAULT_RETRY.with_deadline(60)
        self.bytes_sent = 0

    def insert(self, rows: Sequence[Row]) -> list[InsertFailure]:
        """Load rows with one job; route them one by one when the job fails."""
        fitting, failures = check_fields(self._schema, rows)
        if not fitting:
            return failures
        now = datetime.now(UTC).isoformat()  # load jobs have no insertAll "AUTO" timestamp
        stamps = {f.name for f in self._schema.fields() if f.type is FieldType.TIMESTAMP}
        body = b"".join(_ndjson(row, stamps, now) for row in fitting)
        name = f"{self._prefix}/{self._table.table_id}/{uuid.uuid4().hex}.ndjson"
        self._stage(name, body)
        errors = self._load(name)
        if errors and _transient(errors):
            errors = self._load(name)  # the first job is DONE: the object is still ours
        self._unstage(name)
        return failures + self._fallback.insert(fitting) if errors else failures

    def _load(self, name: str) -> list[dict[str, Any]]:
        """Run one load job of a staged object to its end; return its errors (empty: loaded).

        Notes:
            When jobs.insert fails the job is taken as never created and the object is
            deleted before the error is raised; once a job exists the object stays until
            the job is DONE.
        """
        try:
            job = self._start(name)
        except PlowlineError:
            self._unstage(name)
            raise
        return self._wait(job)

    def _stage(self, name: str, body: bytes) -> None:
        blob = self._bucket.blob(name)
        with translated(f"stage {len(body)} bytes at gs://{self._bucket_name}/{name}"):
            blob.upload_from_string(body, content_type="application/x-ndjson")
        self.bytes_sent += len(body)

    def _unstage(self, name: str) -> None:
        """Delete a staged object, best effort (a failure is logged, never raised)."""
        uri = f"gs://{self._bucket_name}/{name}"
        try:
            with translated(f"delete {uri}"), suppress(gexc.NotFound):
                self._bucket.blob(name).delete(retry=self._retry)
        except PlowlineError as error:
            _log.warning(
                "staged object left behind: a bucket lifecycle rule should delete it",
                object=uri,
                error=str(error),
            )

    def _start(self, name: str) -> bigquery.LoadJob:
        """Create the load job of a staged object (jobs.insert), or find ours after a lost answer."""
        fields = self._schema.fields()
        config = bigquery.LoadJobConfig(
            source_format=bigquery.SourceFormat.NEWLINE_DELIMITED_JSON,
            write_disposition=bigquery.WriteDisposition.WRITE_APPEND,
            create_disposition=bigquery.CreateDisposition.CREATE_NEVER,
            schema=[bigquery.SchemaField.from_api_repr(field.to_api()) for field in fields],
            max_bad_records=0,
            ignore_unknown_values=False,
        )
        uri = f"gs://{self._bucket_name}/{name}"
        job_id = f"plowline-load-{uuid.uuid4().hex}"
        with translated(f"load {uri} into {self._table.table_id}"):
            try:
                return self._bq.load_table_from_uri(
                    uri, self._table, job_id=job_id, job_config=config, retry=self._retry
                )
            except gexc.Conflict:
                # Our retry sent jobs.insert again after its response was lost: the job
                # exists (the id is ours and new), so wait on it rather than load again.
                fetched = self._bq.get_job(job_id, location=self._bq.location, retry=self._retry)
                return cast(bigquery.LoadJob, fetched)  # the id is a load job's

    def _wait(self, job: bigquery.LoadJob) -> list[dict[str, Any]]:
        """Poll jobs.get until the job is DONE; return its errors (empty when the rows landed).

        Raises:
            PermanentError: jobs.get was refused for good (the job is left as it is).
        """
        polls, waited, report_at = 0, 0.0, self._timeout
        while job.state != "DONE":
            try:
                with translated(f"poll load job {job.job_id}"):
                    job.reload(retry=self._retry, timeout=self._timeout)
            except TransientError as error:
                _log.warning("jobs.get failed; polling the load job again", error=str(error))
            if job.state == "DONE":
                break
            if waited >= report_at:
                _log.warning("load job still running; waiting on", job=job.job_id, seconds=waited)
                report_at += self._timeout
            delay = _poll_delay(polls)
            self._sleep(delay)
            polls, waited = polls + 1, waited + delay
        if job.error_result:
            return list(job.errors or [job.error_result])
        return []


def _poll_delay(polls: int) -> float:
    """Return the seconds to wait before poll ``polls + 1``: growing, never above the cap."""
    return min(_FIRST_POLL * _POLL_GROWTH ** min(polls, 32), _LONGEST_POLL)


def _ndjson(row: Row, stamps: set[str], now: str) -> bytes:
    data = row.data
    if any(data.get(name) == "AUTO" for name in stamps):
        data = {k: now if k in stamps and v == "AUTO" else v for k, v in data.items()}
    return (json.dumps(data, separators=(",", ":"), ensure_ascii=False) + "\n").encode()


def _transient(errors: Sequence[dict[str, Any]]) -> bool:
    return any(str(error.get("reason")) in _TRANSIENT_REASONS for error in errors)
