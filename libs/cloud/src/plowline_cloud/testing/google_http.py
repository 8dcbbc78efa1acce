"""Google's side of BigQuery's REST API and Cloud Storage's JSON API, modelled and scripted.

``ScriptedGoogleHttp`` is a ``requests`` transport adapter: mounted on the session of an
official ``bigquery.Client`` or ``storage.Client`` whose endpoint is ``ENDPOINT``
(``bigquery_client``, ``storage_client``), it answers the calls plowline's sinks make —
insertAll, jobs.insert / jobs.get (load and query jobs), getQueryResults, object upload
and delete — from a model of tables and staged objects, so every line of the sinks and
of Google's client (its retries, its job polling) runs. Each call takes the next
``HttpFault`` of its route's script (``faults[route]``), OK when the script is empty.

Notes:
    BigQuery's answers modelled: insertAll with ``skipInvalidRows=false`` refuses a
    request holding a row of ``bad_ids`` (``invalid`` for it, ``stopped`` for the rest,
    nothing inserted) and keeps no ``insertId`` dedup (the worst case it allows); a load
    job is all or nothing; a job id used twice is 409 ``duplicate``; a query on a table
    with ``require_partition_filter`` and no filter on that column is refused. Queries:
    the two the exactly-once sink asks (ledger entries by event id, event ids present in
    the events table), answered from ``tables`` (shared with ``ScriptedWriteClient``).
"""

from __future__ import annotations

import json
import re
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from enum import StrEnum
from typing import Any

import requests
from google.auth.credentials import AnonymousCredentials
from google.cloud import bigquery
from requests.adapters import BaseAdapter

ENDPOINT = "http://google.scripted"
Tables = Callable[[], Mapping[str, list[dict[str, Any]]]]


class HttpFault(StrEnum):
    """What Google (or the network) does with one HTTP call."""

    OK = "ok"
    BACKEND_ERROR = "backend-error"  # 500 backendError: not applied
    LOST = "lost"  # the connection breaks before the call is applied
    LOST_APPLIED = "lost-applied"  # applied, then the connection breaks: no answer
    FORBIDDEN = "forbidden"  # 403 (a retention policy, no objects.delete): not applied
    JOB_BACKEND_ERROR = "job-backend-error"  # a load job that ends in backendError


class ScriptedGoogleHttp(BaseAdapter):
    """BigQuery and Cloud Storage over HTTP: a model of tables and objects, scripted."""

    def __init__(
        self,
        *,
        bad_ids: Iterable[str] = (),
        tables: Tables | None = None,
        require_partition_filter: str | None = None,
        key: str = "event_id",
    ) -> None:
        super().__init__()
        self.bad_ids = set(bad_ids)
        self.faults: dict[str, list[HttpFault]] = {}
        self.rows: dict[str, list[dict[str, Any]]] = {}  # tables written over HTTP
        self.objects: dict[str, bytes] = {}  # gs://bucket/name -> bytes
        self.jobs: dict[str, dict[str, Any]] = {}
        self._results: dict[str, tuple[list[str], list[tuple[Any, ...]]]] = {}
        self._tables = tables or (lambda: self.rows)
        self._partition = require_partition_filter
        self._key = key

    def count(self, table_suffix: str = "") -> dict[str, int]:
        """Return how many times each key is in the HTTP tables whose path ends so."""
        counts: dict[str, int] = {}
        for path, rows in self.rows.items():
            if path.endswith(table_suffix):
                for row in rows:
                    counts[str(row.get(self._key))] = counts.get(str(row.get(self._key)), 0) + 1
        return counts

    def send(self, request: requests.PreparedRequest, **_: Any) -> requests.Response:  # type: ignore[override]  # requests' signature is untyped
        url = urllib.parse.urlsplit(str(request.url))
        route, handler = self._route(str(request.method), url.path)
        script = self.faults.get(route) or []
        fault = script.pop(0) if script else HttpFault.OK
        if fault is HttpFault.LOST:
            raise requests.exceptions.ConnectionError(f"{route}: connection reset")
        if fault is HttpFault.BACKEND_ERROR:
            return _error(request, 500, "backendError", f"{route}: backend error")
        if fault is HttpFault.FORBIDDEN:
            return _error(request, 403, "forbidden", f"{route}: permission denied")
        status, body = handler(request, url, fault)
        if fault is HttpFault.LOST_APPLIED:
            raise requests.exceptions.ConnectionError(f"{route}: connection reset after the call")
        return _response(request, status, body)

    def close(self) -> None:
        """Nothing to release."""

    def _route(self, method: str, path: str) -> tuple[str, Any]:
        if method == "POST" and path.endswith("/insertAll"):
            return "insertAll", self._insert_all
        if method == "POST" and re.fullmatch(r"/bigquery/v2/projects/[^/]+/jobs", path):
            return "jobs.insert", self._insert_job
        if method == "GET" and "/tables/" in path:
            return "tables.get", self._get_table
        if method == "GET" and "/jobs/" in path:
            return "jobs.get", self._get_job
        if method == "GET" and "/queries/" in path:
            return "queries", self._query_results
        if method == "POST" and path.startswith("/upload/storage/v1/b/"):
            return "upload", self._upload
        if method == "DELETE" and path.startswith("/storage/v1/b/"):
            return "delete", self._delete
        raise AssertionError(f"ScriptedGoogleHttp: no route for {method} {path}")

    def _get_table(self, _: Any, url: Any, __: HttpFault) -> tuple[int, Any]:
        parts = url.path.removeprefix("/bigquery/v2/").split("/")
        reference = {"projectId": parts[1], "datasetId": parts[3], "tableId": parts[5]}
        table: dict[str, Any] = {"tableReference": reference, "schema": {"fields": []}}
        if self._partition:
            table["timePartitioning"] = {"type": "DAY", "field": self._partition}
            table["requirePartitionFilter"] = True
            table["schema"]["fields"] = [{"name": self._partition, "type": "TIMESTAMP"}]
        return 200, table

    def _insert_all(self, request: Any, url: Any, _: HttpFault) -> tuple[int, Any]:
        table = url.path.removeprefix("/bigquery/v2/").removesuffix("/insertAll")
        entries = json.loads(request.body)["rows"]
        bad = [i for i, e in enumerate(entries) if str(e["json"].get(self._key)) in self.bad_ids]
        if bad:
            errors = [
                {"index": i, "errors": [{"reason": "invalid" if i in bad else "stopped"}]}
                for i in range(len(entries))
            ]
            return 200, {"insertErrors": errors}
        self.rows.setdefault(table, []).extend(entry["json"] for entry in entries)
        return 200, {}

    def _insert_job(self, request: Any, _: Any, fault: HttpFault) -> tuple[int, Any]:
        job = json.loads(request.body)
        job_id = job["jobReference"]["jobId"]
        if job_id in self.jobs:
            return 409, _error_body(409, "duplicate", f"Already Exists: Job {job_id}")
        job["jobReference"].setdefault("location", "US")
        config = job["configuration"]
        if "load" in config:
            self._run_load(job, config["load"], fault)
        else:
            refusal = self._run_query(job_id, config["query"])
            if refusal:
                return 400, _error_body(400, "invalidQuery", refusal)
            job["status"] = {"state": "DONE"}
        self.jobs[job_id] = job
        return 200, job

    def _run_load(self, job: dict[str, Any], load: dict[str, Any], fault: HttpFault) -> None:
        job["status"] = {"state": "RUNNING"}
        ref = load["destinationTable"]
        table = f"projects/{ref['projectId']}/datasets/{ref['datasetId']}/tables/{ref['tableId']}"
        lines = b"".join(self.objects[uri] for uri in load["sourceUris"]).splitlines()
        rows = [json.loads(line) for line in lines if line.strip()]
        if fault is HttpFault.JOB_BACKEND_ERROR:
            error = {"reason": "backendError", "message": "backend error"}
        elif any(str(row.get(self._key)) in self.bad_ids for row in rows):
            error = {"reason": "invalid", "message": "a row is invalid"}
        else:
            self.rows.setdefault(table, []).extend(rows)
            return
        job["_error"] = error

    def _get_job(self, _: Any, url: Any, __: HttpFault) -> tuple[int, Any]:
        job = self.jobs.get(url.path.rsplit("/", 1)[-1])
        if job is None:
            return 404, _error_body(404, "notFound", "Not found: Job")
        job["status"] = {"state": "DONE"}
        if "_error" in job:
            job["status"] |= {"errorResult": job["_error"], "errors": [job["_error"]]}
        return 200, {k: v for k, v in job.items() if k != "_error"}

    def _run_query(self, job_id: str, query: dict[str, Any]) -> str | None:
        sql = query["query"]
        ids = {
            str(v["value"])
            for p in query.get("queryParameters", ())
            if p["name"] == "ids"
            for v in p["parameterValue"].get("arrayValues", ())
        }
        name = re.search(r"`([^`]+)`", sql)
        assert name, sql
        project, dataset, table = name.group(1).split(".")
        rows = self._tables().get(f"projects/{project}/datasets/{dataset}/tables/{table}", [])
        if "UNNEST(event_ids)" in sql:
            found = [
                (row.get("stream"), str(event_id), row.get("kind"))
                for row in rows
                for event_id in row.get("event_ids", ())
                if str(event_id) in ids
            ]
            self._results[job_id] = (["stream", "id", "kind"], found)
            return None
        if self._partition and self._partition not in sql:
            return (
                f"Cannot query over table '{dataset}.{table}' without a filter over column(s) "
                f"'{self._partition}' that can be used for partition elimination"
            )
        present = sorted({str(row.get(self._key)) for row in rows} & ids)
        self._results[job_id] = ([self._key], [(event_id,) for event_id in present])
        return None

    def _query_results(self, _: Any, url: Any, __: HttpFault) -> tuple[int, Any]:
        job_id = url.path.rsplit("/", 1)[-1]
        names, rows = self._results[job_id]
        return 200, {
            "jobComplete": True,
            "jobReference": {"projectId": "p", "jobId": job_id, "location": "US"},
            "schema": {"fields": [{"name": n, "type": "STRING"} for n in names]},
            "rows": [{"f": [{"v": value} for value in row]} for row in rows],
            "totalRows": str(len(rows)),
        }

    def _upload(self, request: Any, url: Any, _: HttpFault) -> tuple[int, Any]:
        bucket = url.path.split("/")[5]
        kind = request.headers["content-type"]
        kind = kind.decode() if isinstance(kind, bytes) else str(kind)
        boundary = b"--" + kind.split("boundary=", 1)[1].strip('"').encode()
        parts = [part.split(b"\r\n\r\n", 1)[1] for part in request.body.split(boundary)[1:3]]
        metadata = json.loads(parts[0])
        self.objects[f"gs://{bucket}/{metadata['name']}"] = parts[1].removesuffix(b"\r\n")
        return 200, {"bucket": bucket, "name": metadata["name"], "generation": "1"}

    def _delete(self, _: Any, url: Any, __: HttpFault) -> tuple[int, Any]:
        bucket, _, rest = url.path.removeprefix("/storage/v1/b/").partition("/o/")
        uri = f"gs://{bucket}/{urllib.parse.unquote(rest)}"
        if self.objects.pop(uri, None) is None:
            return 404, _error_body(404, "notFound", f"No such object: {uri}")
        return 204, None


def bigquery_client(adapter: ScriptedGoogleHttp, project: str = "p") -> bigquery.Client:
    """Return an official BigQuery client whose every call goes to ``adapter``."""
    client = bigquery.Client(
        project=project,
        credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]  # untyped in google-auth
        client_options={"api_endpoint": ENDPOINT},
    )
    client._http.mount(ENDPOINT, adapter)
    return client


def storage_client(adapter: ScriptedGoogleHttp, project: str = "p") -> Any:
    """Return an official Cloud Storage client whose every call goes to ``adapter``."""
    from google.cloud import storage

    client = storage.Client(
        project=project,
        credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]  # as above
        client_options={"api_endpoint": ENDPOINT},
    )
    client._http.mount(ENDPOINT, adapter)
    return client


def _response(request: Any, status: int, body: Any) -> requests.Response:
    response = requests.Response()
    response.status_code = status
    response.request = request
    response.url = str(request.url)
    response.headers["content-type"] = "application/json"
    response._content = b"" if body is None else json.dumps(body).encode()
    return response


def _error_body(code: int, reason: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "errors": [{"reason": reason}]}}


def _error(request: Any, code: int, reason: str, message: str) -> requests.Response:
    return _response(request, code, _error_body(code, reason, message))
