"""Correction: jobs.insert with a job id already taken answers 409 ``duplicate``, runs nothing.

Real BigQuery (jobs.insert, "Generating a job ID"): a job id is unique in its project; a
second jobs.insert with it is refused with 409 "Already Exists: Job …" (reason
``duplicate``) and the first job is left as it is. That is what makes a retried jobs.insert
safe: when the first call was applied and its answer lost, the retry learns the job exists
and the caller fetches it by its id. bqemulator runs the job again under the same id
(``upsert_job``): a retried load job loads its rows twice.
"""

from __future__ import annotations

from typing import Any

from plowline_devstack.bigquery.interception import Correction, Exchange, Reply

_JOBS = "/bigquery/v2/projects/{project}/jobs"


async def refuse_taken_job_id(exchange: Exchange) -> Reply:
    """Answer 409 when the body's ``jobReference.jobId`` is a job the project has."""
    body: Any = exchange.json()
    reference: Any = body.get("jobReference") if isinstance(body, dict) else None
    if not isinstance(reference, dict):
        reference = {}
    job_id = reference.get("jobId")
    project = exchange.params["project"]
    if job_id and exchange.context.catalog.get_job(project, str(job_id)) is not None:
        location = str(reference.get("location") or "US")
        message = f"Already Exists: Job {project}:{location}.{job_id}"
        return Reply.of_json(
            409,
            {
                "error": {
                    "code": 409,
                    "message": message,
                    "errors": [{"message": message, "domain": "global", "reason": "duplicate"}],
                    "status": "ALREADY_EXISTS",
                }
            },
        )
    return await exchange.forward(exchange.body)


JOB_ID_TAKEN = Correction(
    name="job-id-taken",
    summary="jobs.insert with a job id already used answers 409 duplicate, as BigQuery",
    methods=("POST",),
    paths=(_JOBS,),
    handler=refuse_taken_job_id,
)
