"""The BigQuery REST faults of the catalogue (:mod:`.catalogue`), on the routes that matter.

Unlike the corrections (always on, :mod:`plowline_devstack.bigquery.corrections`), these make the emulator fail the
way BigQuery does now and then; each is off unless the plan names it. They sit first in
the interception chain (:mod:`plowline_devstack.bigquery.interception`), so a call that fails never reaches a
correction or the emulator:

* ``backend-error``: the call is answered 500 or 503 ``backendError``, nothing applied.
* ``rate-limit-exceeded``: the call is answered 403 or 429 ``rateLimitExceeded``, nothing
  applied.
* ``timeout``: the call hangs for ``seconds`` (past the client's timeout), then is answered
  503 ``backendError``, nothing applied.
* ``response-lost-after-write``: a write (insertAll, tables.patch/update, jobs.insert) is
  applied, then answered 503 ``backendError`` instead of its result. A retried insertAll
  is then de-duplicated by insertId (the ``insert-id-dedup`` correction, within its
  window); a retried jobs.insert finds its job id taken.
* ``slow-load-job``: a load job's jobs.insert is answered at once with the job
  ``RUNNING`` (nothing run yet), and jobs.get answers the same for ``seconds``; then the
  job runs as the emulator runs it (reading its ``gs://`` sources then, so a source
  deleted meanwhile fails it) and jobs.get answers the emulator's ``DONE`` job. Another
  jobs.insert with the id of a job still running answers 409 ``duplicate``.

The same entries note the columns each successful tables.patch/update adds, for the Write
API's ``schema-propagation-delay`` (:func:`record_widening`, read by :mod:`.bigquery_write`).

Routes (``FAULTED_ROUTES``): insertAll; tables.get/patch/update; jobs.insert, jobs.get,
jobs.query, jobs.getQueryResults. Creating datasets and tables, listing and reading rows
(tabledata.list) are never faulted, so a stack always provisions. A slow job is known to
jobs.get alone while it runs (jobs.list and jobs.cancel see it once it is DONE).

Each fault draws from its own generator seeded with the plan's seed and its name: the same
seed and the same calls fail the same way. The error bodies are BigQuery's JSON error
shape (``error.code``, ``error.message``, ``error.errors[].reason``, ``error.status``),
which the official client reads to decide whether to retry.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any

from plowline_devstack.bigquery.interception import Correction, Exchange, Reply
from plowline_devstack.faults.catalogue import Params
from plowline_devstack.faults.draws import FaultDraws

BACKEND_ERROR = "backend-error"
RATE_LIMIT = "rate-limit-exceeded"
TIMEOUT = "timeout"
RESPONSE_LOST = "response-lost-after-write"
STREAM_BROKEN = "append-stream-broken-after-apply"
PROPAGATION_DELAY = "schema-propagation-delay"
ROW_ERRORS_THEN_INTERNAL = "append-row-errors-then-internal"
COMMIT_INVALID_STATE = "commit-invalid-stream-state"
SLOW_LOAD_JOB = "slow-load-job"
BACKEND_MESSAGE = (
    "An internal error occurred and the request could not be completed. This is usually "
    "caused by a transient issue. Retrying the job with back-off as described in the "
    "BigQuery SLA should solve the problem."
)
RATE_LIMIT_MESSAGE = (
    "Exceeded rate limits: too many api requests per user per method for this user_method."
)

_PROJECT = "/bigquery/v2/projects/{project}"
_TABLE = _PROJECT + "/datasets/{dataset}/tables/{table}"
_JOBS = _PROJECT + "/jobs"
_JOB = _PROJECT + "/jobs/{job}"
FAULTED_ROUTES: tuple[tuple[str, str], ...] = (
    ("POST", _TABLE + "/insertAll"),
    ("GET", _TABLE),
    ("PATCH", _TABLE),
    ("PUT", _TABLE),
    ("POST", _JOBS),
    ("GET", _JOB),
    ("POST", _PROJECT + "/queries"),
    ("GET", _PROJECT + "/queries/{job}"),
)
"""(method, path) of every call the REST faults apply to."""

_WRITES = frozenset(
    {
        ("POST", _TABLE + "/insertAll"),
        ("PATCH", _TABLE),
        ("PUT", _TABLE),
        ("POST", _JOBS),
    }
)


def error_reply(status: int, reason: str, message: str) -> Reply:
    """Return BigQuery's JSON error for ``status`` with one error of ``reason``."""
    grpc_status = {
        403: "PERMISSION_DENIED",
        409: "ALREADY_EXISTS",
        429: "RESOURCE_EXHAUSTED",
        500: "INTERNAL",
        503: "UNAVAILABLE",
    }[status]
    domain = "usageLimits" if reason == "rateLimitExceeded" else "global"
    return Reply.of_json(
        status,
        {
            "error": {
                "code": status,
                "message": message,
                "errors": [{"message": message, "domain": domain, "reason": reason}],
                "status": grpc_status,
            }
        },
    )


def backend_error(status: int = 503) -> Reply:
    """Return BigQuery's ``backendError`` (500 or 503)."""
    return error_reply(status, "backendError", BACKEND_MESSAGE)


class BigQueryFaults(FaultDraws):
    """Draw the BigQuery faults a plan turned on (thread-safe: REST and gRPC both draw)."""

    def __init__(self, plan: Mapping[str, Params] | None = None, seed: int = 0) -> None:
        super().__init__(plan, seed)
        self.hang_seconds = float(self.plan.get(TIMEOUT, {}).get("seconds", 60.0))

    def param(self, name: str, key: str) -> float | None:
        """Return parameter ``key`` of fault ``name``, None when the fault is off."""
        params = self.plan.get(name)
        return None if params is None else float(params[key])


@dataclass(slots=True)
class _State:
    faults: BigQueryFaults


_state = _State(BigQueryFaults())


def configure(faults: BigQueryFaults) -> None:
    """Turn on the faults of ``faults`` in this process (the launcher calls it once)."""
    _state.faults = faults


def current() -> BigQueryFaults:
    """Return the faults on in this process (none unless configured)."""
    return _state.faults


TableKey = tuple[str, str, str]
_widened: dict[TableKey, tuple[float, frozenset[str]]] = {}
"""Per table: until when (monotonic) new columns stay unknown to appends, and the old columns."""
_widened_lock = threading.Lock()


def record_widening(table: TableKey, before: frozenset[str], after: frozenset[str]) -> None:
    """Note that ``table`` gained columns now (``schema-propagation-delay``; no-op when off)."""
    delay = _state.faults.param(PROPAGATION_DELAY, "seconds")
    if delay is None or not after - before:
        return
    now = time.monotonic()
    with _widened_lock:
        until, known = _widened.get(table, (0.0, before))
        if until < now:
            known = before  # an earlier widening has propagated by now
        _widened[table] = (now + delay, known)


def not_yet_propagated(table: TableKey, names: list[str]) -> list[str]:
    """Return those of ``names`` that are columns of ``table`` too new for the Write API."""
    with _widened_lock:
        until, known = _widened.get(table, (0.0, frozenset()))
    if until < time.monotonic():
        return []
    lowered = {name.lower() for name in known}
    return [name for name in names if name.lower() not in lowered]


def _columns(context: Any, params: Mapping[str, str]) -> frozenset[str]:
    meta = context.catalog.get_table(params["project"], params["dataset"], params["table"])
    return frozenset() if meta is None else frozenset(f.name for f in meta.schema_.fields)


async def _forward_noting_widening(exchange: Exchange, method: str) -> Reply:
    """Forward; for a successful tables.patch/update, record the columns it added."""
    if method not in ("PATCH", "PUT") or _state.faults.param(PROPAGATION_DELAY, "seconds") is None:
        return await exchange.forward(exchange.body)
    before = _columns(exchange.context, exchange.params)
    reply = await exchange.forward(exchange.body)
    if 200 <= reply.status < 300:
        key = (exchange.params["project"], exchange.params["dataset"], exchange.params["table"])
        record_widening(key, before, _columns(exchange.context, exchange.params))
    return reply


JobKey = tuple[str, str]
_running: MutableMapping[JobKey, dict[str, Any]] = {}
"""Per (project, job id): the resource jobs.get answers while a slow load job runs.

Notes:
    Touched only by the REST handlers, on the server's one event loop (no lock needed).
"""
_finishing: set[asyncio.Task[None]] = set()  # the event loop keeps only weak references


def _job_id(exchange: Exchange) -> str | None:
    body: Any = exchange.json()
    reference = body.get("jobReference") if isinstance(body, dict) else None
    job_id = reference.get("jobId") if isinstance(reference, dict) else None
    return str(job_id) if job_id else None


def _is_load(exchange: Exchange) -> bool:
    body: Any = exchange.json()
    config = body.get("configuration") if isinstance(body, dict) else None
    return isinstance(config, dict) and "load" in config


def _running_resource(project: str, job_id: str, configuration: Any) -> dict[str, Any]:
    """Return the job resource BigQuery answers for a load job that has not ended."""
    started = str(int(time.time() * 1000))
    return {
        "kind": "bigquery#job",
        "id": f"{project}:{job_id}",
        "jobReference": {"projectId": project, "jobId": job_id, "location": "US"},
        "configuration": configuration,
        "status": {"state": "RUNNING"},
        "statistics": {"creationTime": started, "startTime": started},
    }


def _ended(running: dict[str, Any], reply: Reply) -> dict[str, Any] | None:
    """Return the resource of a job the emulator refused to run, None when it ran it.

    Notes:
        A job BigQuery accepted always ends: a refusal the emulator would have answered at
        jobs.insert (a bad configuration) becomes the job's ``errorResult``.
    """
    if 200 <= reply.status < 300:
        return None  # the emulator's catalogue holds the job now, DONE
    error: Any = reply.json()
    detail = error.get("error", {}) if isinstance(error, dict) else {}
    reasons = detail.get("errors") or [{}]
    result = {
        "reason": str(reasons[0].get("reason") or "backendError"),
        "message": str(detail.get("message") or BACKEND_MESSAGE),
    }
    return {**running, "status": {"state": "DONE", "errorResult": result, "errors": [result]}}


async def _finish_later(exchange: Exchange, key: JobKey, seconds: float) -> None:
    """Run the load job after ``seconds``; until it has run, jobs.get answers RUNNING."""
    await asyncio.sleep(seconds)
    reply = backend_error()  # a job the emulator failed to run at all ends in backendError
    try:
        reply = await exchange.forward(exchange.body)
    finally:
        ended = _ended(_running[key], reply)
        if ended is None:
            del _running[key]
        else:
            _running[key] = ended


def _start_slowly(exchange: Exchange, job_id: str, seconds: float) -> Reply:
    """Answer jobs.insert with the job RUNNING and run it ``seconds`` later."""
    project = exchange.params["project"]
    body: Any = exchange.json()
    running = _running_resource(project, job_id, body.get("configuration"))
    _running[(project, job_id)] = running
    task = asyncio.get_running_loop().create_task(
        _finish_later(exchange, (project, job_id), seconds)
    )
    _finishing.add(task)
    task.add_done_callback(_finishing.discard)
    return Reply.of_json(200, running)


async def _insert_job(exchange: Exchange, faults: BigQueryFaults) -> Reply:
    """jobs.insert: a load job may run slowly (``slow-load-job``); others go on at once."""
    project, job_id = exchange.params["project"], _job_id(exchange)
    if job_id is not None and (project, job_id) in _running:
        message = f"Already Exists: Job {project}:US.{job_id}"
        return error_reply(409, "duplicate", message)
    seconds = faults.param(SLOW_LOAD_JOB, "seconds")
    if (
        job_id is not None
        and seconds is not None
        and _is_load(exchange)
        and exchange.context.catalog.get_job(project, job_id) is None  # taken: 409 follows
        and faults.draw(SLOW_LOAD_JOB)
    ):
        return _start_slowly(exchange, job_id, seconds)
    return await exchange.forward(exchange.body)


def _entry(method: str, path: str) -> Correction:
    write = (method, path) in _WRITES

    async def handle(exchange: Exchange) -> Reply:
        faults = _state.faults
        if faults.draw(BACKEND_ERROR):
            return backend_error(500 if faults.coin(BACKEND_ERROR) else 503)
        if faults.draw(RATE_LIMIT):
            status = 403 if faults.coin(RATE_LIMIT) else 429
            return error_reply(status, "rateLimitExceeded", RATE_LIMIT_MESSAGE)
        if faults.draw(TIMEOUT):
            await asyncio.sleep(faults.hang_seconds)
            return backend_error()
        if path == _JOB:
            running = _running.get((exchange.params["project"], exchange.params["job"]))
            if running is not None:
                return Reply.of_json(200, running)
        if (method, path) == ("POST", _JOBS):
            reply = await _insert_job(exchange, faults)
        else:
            reply = await _forward_noting_widening(exchange, method)
        if write and 200 <= reply.status < 300 and faults.draw(RESPONSE_LOST):
            return backend_error()
        return reply

    return Correction(
        name=f"faults {method} {path}",
        summary="REST faults on demand (off unless a fault plan names them)",
        methods=(method,),
        paths=(path,),
        handler=handle,
    )


def rest_faults() -> tuple[Correction, ...]:
    """Return the interception entries that inject the REST faults, one per faulted route.

    Notes:
        They go first in the chain (before every correction), so a refused call changes
        nothing and a lost response follows every correction's work.
    """
    return tuple(_entry(method, path) for method, path in FAULTED_ROUTES)
