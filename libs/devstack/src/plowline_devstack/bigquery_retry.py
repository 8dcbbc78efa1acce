"""The retry for BigQuery calls against the local BigQuery stand-in: short, so no call hangs.

Notes:
    The retry trap: bqemulator answers some errors with HTTP 500, which the BigQuery
    client's ``DEFAULT_RETRY`` retries for 600 s. Every BigQuery call the stack and its
    demo make passes :data:`BIGQUERY_RETRY` and, for jobs, ``job_retry=None``. The clients
    themselves come from ``plowline_cloud.clients``, pointed at ``Endpoints``.
"""

from __future__ import annotations

from google.cloud.bigquery.retry import DEFAULT_RETRY

BIGQUERY_RETRY = DEFAULT_RETRY.with_deadline(10.0)
"""Retry for BigQuery calls against the emulator: short, so one bad call cannot hang."""
