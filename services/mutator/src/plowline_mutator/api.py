"""The mutator's HTTP API (FastAPI): add a column by hand, list and preview columns, probes.

    POST /v1/columns           {"schema": "iglu:…", "shredProperty": "CONTEXTS"}
                               201 added, 200 already there, 400 body not UTF-8 JSON,
                               404 unknown schema, 409 the table cannot take it (conflicting
                               column, BigQuery's column limit), 422 malformed request or
                               illegal column name, 502 BigQuery refused, 503 Iglu or
                               BigQuery failing (Retry-After)
    GET  /v1/columns           entity columns with the schema each came from (see catalogue)
    GET  /v1/columns/preview   ?schema=iglu:…&shredProperty=…: the column, nothing written
    GET  /healthz  /readyz  /metrics                    probes: never need the token
    GET  /openapi.json  /docs                           the API's document

The probes answer what every command's health server answers (``plowline_cloud.metrics``:
``health_answer``, ``ready_answer``; the gauges of ``plowline_cloud.liveness``), on the
API's own port and event loop.

Every route but the probes needs ``Authorization: Bearer <token>`` (401 otherwise); GET
routes are opened to all by ``open_reads`` (``--open-read-access``). Bodies over
``max_body_bytes`` get 413. Both are checked by the ``gate`` before a body is read.

Notes:
    Nothing from a request reaches BigQuery but through schema objects: the URI is parsed
    into a ``SchemaKey``, the schema is resolved from Iglu, and the column is built by
    ``column_field`` and its names checked (``plowline_core.schema.limits``).
    Routes are sync: FastAPI runs them on its thread pool, and the mutator's lock
    serializes table updates with the listener.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import FastAPI, HTTPException, Query, Request, Response, Security
from fastapi.exception_handlers import http_exception_handler
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from fastapi.security import HTTPBearer
from plowline_cloud.metrics import ProbeAnswer, health_answer, ready_answer
from plowline_core.errors import PermanentError, RegistryUnavailable, TransientError
from plowline_core.iglu.key import SchemaKey
from plowline_core.iglu.resolver import SchemaNotFound
from plowline_core.ports import TableSchemaStore
from plowline_core.schema.ddl_json import InvalidSchema
from plowline_core.schema.entity import EntityType, ShredProperty
from plowline_core.schema.limits import illegal_names
from prometheus_client import CONTENT_TYPE_LATEST
from pydantic import SecretStr
from starlette.exceptions import HTTPException as StarletteHTTPException

from plowline_mutator.api_models import (
    INVALID,
    MAX_URI_LENGTH,
    REFUSED,
    SCHEMA_URI_EXAMPLE,
    SCHEMA_URI_PATTERN,
    TOO_LARGE,
    UNAUTHORIZED,
    UNAVAILABLE,
    ColumnDescription,
    ColumnField,
    ColumnRequest,
    Health,
    Readiness,
    problem,
)
from plowline_mutator.catalogue import describe_columns
from plowline_mutator.gate import DEFAULT_MAX_BODY_BYTES, Access, AccessGate
from plowline_mutator.metrics import MutatorMetrics
from plowline_mutator.mutation import Mutator, Rejection

SOURCE = "http"
_RETRY_AFTER = "5"
_bearer = HTTPBearer(auto_error=False, description="The mutator's API token")
_REJECTION_STATUS = {
    Rejection.ILLEGAL_NAME: 422,
    Rejection.COLUMN_LIMIT: 409,
    Rejection.REFUSED: 502,
}


@dataclass(frozen=True, slots=True)
class ApiContext:
    """What the API needs; built by ``bootstrap`` (or by tests over fakes)."""

    mutator: Mutator
    schema_store: TableSchemaStore
    metrics: MutatorMetrics
    token: SecretStr | None
    ready: Callable[[], bool] = lambda: True
    registries: Callable[[], list[dict[str, Any]]] = list  # Iglu registries in an outage
    open_reads: bool = False
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    liveness: Callable[[], Mapping[str, Any]] = lambda: {"alive": True}  # ProgressWatch.details

    def access(self) -> Access:
        """Return the gate's rules for this context."""
        token = self.token.get_secret_value().encode() if self.token is not None else None
        return Access(token, self.open_reads, self.max_body_bytes)


def create_app(context: ApiContext) -> AccessGate:
    """Return the API (an ASGI app: the gate in front of FastAPI) over the given mutator."""
    return AccessGate(build_api(context), context.access())


def build_api(context: ApiContext) -> FastAPI:
    """Return the FastAPI app of the routes, without the gate (for its document)."""
    app = FastAPI(
        title="plowline mutator",
        version="1",
        description="Keep the Snowplow events table wide enough for every event type.",
    )
    _add_error_handlers(app, context.metrics)
    writes = [Security(_bearer)] if context.token is not None else []
    reads = [] if context.open_reads else writes

    @app.post(
        "/v1/columns",
        status_code=201,
        dependencies=writes,
        response_model=ColumnField,
        responses={
            200: {"model": ColumnField, "description": "the column was already there"},
            201: {"model": ColumnField, "description": "the column was added"},
            400: problem("the body cannot be read as UTF-8 JSON"),
            **UNAUTHORIZED,
            404: problem("no repository has the schema"),
            409: problem("the table cannot take the column (conflict, column limit)"),
            **TOO_LARGE,
            **INVALID,
            **REFUSED,
            **UNAVAILABLE,
        },
    )
    def add_column(request: ColumnRequest) -> JSONResponse:
        """Add the column of a schema; 201 when added, 200 when it already existed."""
        entity = request.entity()
        started = time.monotonic()
        result = context.mutator.add_types([entity])
        context.metrics.record(SOURCE, result, 1, time.monotonic() - started)
        if entity in result.unknown:
            raise HTTPException(404, f"schema not found: {request.schema_uri}")
        rejection = result.rejection_of(entity)
        if rejection is not None:
            status = _REJECTION_STATUS[rejection.kind]
            raise HTTPException(status, f"{rejection.kind.value}: {rejection.reason}")
        conflicts = result.conflicts_of(entity)
        if conflicts:
            raise HTTPException(409, "; ".join(c.reason for c in conflicts))
        column = result.columns[entity]
        return JSONResponse(column.to_api(), status_code=201 if result.was_added(entity) else 200)

    @app.get(
        "/v1/columns",
        dependencies=reads,
        response_model=list[ColumnDescription],
        responses={**UNAUTHORIZED, **TOO_LARGE, **REFUSED, **UNAVAILABLE},
    )
    def list_columns() -> JSONResponse:
        """List the table's entity columns and, where known, the schema each came from."""
        known = context.mutator.known_types()
        table = context.schema_store.refresh()
        return JSONResponse(describe_columns(table, known, context.mutator.column_mode))

    @app.get(
        "/v1/columns/preview",
        dependencies=reads,
        response_model=ColumnField,
        responses={
            **UNAUTHORIZED,
            404: problem("no repository has the schema"),
            **TOO_LARGE,
            **INVALID,
            **UNAVAILABLE,
        },
    )
    def preview_column(
        schema: Annotated[
            str,
            Query(
                description="iglu:vendor/name/format/MODEL-REVISION-ADDITION",
                pattern=SCHEMA_URI_PATTERN,
                max_length=MAX_URI_LENGTH,
                examples=[SCHEMA_URI_EXAMPLE],
            ),
        ],
        shred_property: Annotated[ShredProperty, Query(alias="shredProperty")],
    ) -> JSONResponse:
        """Return the column the mutator would add for a schema; nothing is written."""
        try:
            column = context.mutator.column_for(EntityType(SchemaKey.parse(schema), shred_property))
        except InvalidSchema as error:
            raise HTTPException(422, f"invalid_schema: {error}") from error
        if isinstance(column, SchemaNotFound):
            raise HTTPException(404, f"schema not found: {schema}")
        if column is None:
            raise HTTPException(422, f"no_column: 2.x adds no column for {schema}")
        problems = illegal_names(column)
        if problems:
            raise HTTPException(422, f"illegal_name: {'; '.join(problems)}")
        return JSONResponse(column.to_api())

    @app.get(
        "/healthz",
        response_model=Health,
        responses={
            **TOO_LARGE,
            503: {"model": Health, "description": "held types made no progress for too long"},
        },
    )
    async def healthz() -> Response:
        """Say the process is alive: 503 once held types make no progress for too long."""
        # The probes are ``async``: they answer on the event loop, never waiting for a
        # thread of the pool that API calls (BigQuery, Iglu) can hold all of.
        return _probe(health_answer(context.liveness))

    @app.get(
        "/readyz",
        response_model=Readiness,
        responses={503: {"model": Readiness, "description": "not ready"}, **TOO_LARGE},
    )
    async def readyz() -> Response:
        """Say whether the mutator is ready (its listener runs) and which registries fail."""
        return _probe(ready_answer(context.ready, lambda: {"registries": context.registries()}))

    @app.get(
        "/metrics",
        response_class=Response,
        responses={
            200: {
                "description": "Prometheus text exposition format",
                "content": {CONTENT_TYPE_LATEST.split(";")[0]: {"schema": {"type": "string"}}},
            },
            **TOO_LARGE,
        },
    )
    async def metrics() -> Response:
        """Return the mutator's metrics in the Prometheus text format."""
        return Response(context.metrics.render(), media_type=CONTENT_TYPE_LATEST)

    _allow_every_method_of_a_path(app)
    return app


def _probe(answer: ProbeAnswer) -> Response:
    """Send a probe's answer as the health server of every other command does."""
    status, body, content_type = answer
    return Response(body, status_code=status, media_type=content_type)


def _allow_every_method_of_a_path(app: FastAPI) -> None:
    """Make a 405 list every method of its path, not only those of the first route matched.

    Notes:
        Starlette answers 405 from the first route whose path matches, so ``OPTIONS
        /v1/columns`` would say ``Allow: POST`` although GET is served there too (RFC 9110
        wants every method the resource supports).
    """
    methods: dict[str, set[str]] = {}
    for route in app.routes:
        if isinstance(route, APIRoute):
            methods.setdefault(route.path, set()).update(route.methods or ())

    async def not_allowed(request: Request, error: Exception) -> Response:
        assert isinstance(error, StarletteHTTPException)
        allowed = methods.get(request.url.path)
        if error.status_code == 405 and allowed:
            error.headers = {**(error.headers or {}), "Allow": ", ".join(sorted(allowed))}
        return await http_exception_handler(request, error)

    app.add_exception_handler(StarletteHTTPException, not_allowed)


def _add_error_handlers(app: FastAPI, metrics: MutatorMetrics) -> None:
    async def unavailable(request: Request, error: Exception) -> JSONResponse:
        metrics.failed(
            SOURCE, "registry" if isinstance(error, RegistryUnavailable) else "transient"
        )
        return JSONResponse(
            {"detail": f"unavailable, retry later: {error}"},
            status_code=503,
            headers={"Retry-After": _RETRY_AFTER},
        )

    async def refused(request: Request, error: Exception) -> JSONResponse:
        metrics.failed(SOURCE, "permanent")
        return JSONResponse({"detail": f"refused: {error}"}, status_code=502)

    app.add_exception_handler(TransientError, unavailable)
    app.add_exception_handler(PermanentError, refused)
