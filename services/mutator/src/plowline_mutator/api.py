"""The mutator's HTTP API (FastAPI): add a column by hand, list and preview columns, probes.

    POST /v1/columns           {"schema": "iglu:…", "shredProperty": "CONTEXTS"}   (Bearer token)
                               201 + field added, 200 + field already there, 404 unknown schema,
                               409 conflicting column, 422 malformed request, 503 registry or
                               BigQuery failing (with Retry-After), 401 bad or missing token
    GET  /v1/columns           entity columns with the schema each came from (see catalogue)
    GET  /v1/columns/preview   ?schema=iglu:…&shredProperty=…: the column, nothing written
    GET  /healthz  /readyz  /metrics  /openapi.json  /docs

Notes:
    Nothing from a request reaches BigQuery but through schema objects: the URI is parsed
    into a ``SchemaKey``, the schema is resolved from Iglu, and the column is built by
    ``column_field`` and its name checked with ``is_valid_name``.
    Tokens are compared with ``hmac.compare_digest``. Routes are sync: FastAPI runs them on
    its thread pool, and the mutator's lock serializes table updates with the listener.
"""

from __future__ import annotations

import hmac
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, FastAPI, HTTPException, Query, Request, Response
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from plowline_core.errors import PermanentError, RegistryUnavailable, TransientError
from plowline_core.iglu.key import SchemaKey
from plowline_core.iglu.resolver import SchemaNotFound
from plowline_core.ports import TableSchemaStore
from plowline_core.schema.entity import EntityType, ShredProperty
from prometheus_client import CONTENT_TYPE_LATEST
from pydantic import BaseModel, ConfigDict, SecretStr, field_validator
from pydantic import Field as Body

from plowline_mutator.catalogue import describe_columns
from plowline_mutator.metrics import MutatorMetrics
from plowline_mutator.mutation import Mutator

SOURCE = "http"
_RETRY_AFTER = "5"
_bearer = HTTPBearer(auto_error=False, description="The mutator's API token")


@dataclass(frozen=True, slots=True)
class ApiContext:
    """What the API needs; built by ``bootstrap`` (or by tests over fakes)."""

    mutator: Mutator
    schema_store: TableSchemaStore
    metrics: MutatorMetrics
    token: SecretStr | None
    ready: Callable[[], bool] = lambda: True
    registries: Callable[[], list[dict[str, Any]]] = list  # Iglu registries in an outage
    liveness: Callable[[], Mapping[str, Any]] | None = None  # ProgressWatch.details


class ColumnRequest(BaseModel):
    """Add the column of one (schema, shred property) pair."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    schema_uri: str = Body(alias="schema", examples=["iglu:com.acme/link_click/jsonschema/1-0-0"])
    shred_property: ShredProperty = Body(alias="shredProperty")

    @field_validator("schema_uri")
    @classmethod
    def _is_iglu_uri(cls, value: str) -> str:
        SchemaKey.parse(value)  # ValueError -> 422 naming the URI
        return value

    def entity(self) -> EntityType:
        """Return the entity type asked for."""
        return EntityType(SchemaKey.parse(self.schema_uri), self.shred_property)


def create_app(context: ApiContext) -> FastAPI:
    """Return the API over the given mutator and table."""
    app = FastAPI(
        title="plowline mutator",
        version="1",
        description="Keep the Snowplow events table wide enough for every event type.",
    )
    _add_error_handlers(app, context.metrics)
    authorize = _authorizer(context.token)

    @app.post("/v1/columns", status_code=201, dependencies=[Depends(authorize)])
    def add_column(request: ColumnRequest) -> JSONResponse:
        """Add the column of a schema; 201 when added, 200 when it already existed."""
        entity = request.entity()
        started = time.monotonic()
        result = context.mutator.add_types([entity])
        context.metrics.record(SOURCE, result, 1, time.monotonic() - started)
        if entity in result.unknown:
            raise HTTPException(404, f"schema not found: {request.schema_uri}")
        conflicts = result.conflicts_of(entity)
        if conflicts:
            raise HTTPException(409, "; ".join(c.reason for c in conflicts))
        column = result.columns[entity]
        return JSONResponse(column.to_api(), status_code=201 if result.was_added(entity) else 200)

    @app.get("/v1/columns")
    def list_columns() -> list[dict[str, Any]]:
        """List the table's entity columns and, where known, the schema each came from."""
        known = context.mutator.known_types()
        return describe_columns(context.schema_store.refresh(), known, context.mutator.column_mode)

    @app.get("/v1/columns/preview")
    def preview_column(
        schema: Annotated[str, Query(description="iglu:vendor/name/format/M-R-A")],
        shred_property: Annotated[ShredProperty, Query(alias="shredProperty")],
    ) -> dict[str, Any]:
        """Return the column the mutator would add for a schema; nothing is written."""
        try:
            key = SchemaKey.parse(schema)
        except ValueError as error:
            raise HTTPException(422, str(error)) from None
        column = context.mutator.column_for(EntityType(key, shred_property))
        if isinstance(column, SchemaNotFound):
            raise HTTPException(404, f"schema not found: {schema}")
        return column.to_api()

    @app.get("/healthz")
    def healthz() -> JSONResponse:
        """Say the process is alive: 503 once held types make no progress for too long."""
        if context.liveness is None:
            return JSONResponse({"status": "ok"})
        state = dict(context.liveness())
        return JSONResponse(
            {"status": "ok" if state["alive"] else "stalled", **state},
            status_code=200 if state["alive"] else 503,
        )

    @app.get("/readyz")
    def readyz() -> JSONResponse:
        """Say whether the mutator is ready (its listener runs) and which registries fail."""
        ready = context.ready()
        body = {"ready": ready, "registries": context.registries()}
        return JSONResponse(body, status_code=200 if ready else 503)

    @app.get("/metrics", response_class=Response)
    def metrics() -> Response:
        """Return the mutator's metrics in the Prometheus text format."""
        return Response(context.metrics.render(), media_type=CONTENT_TYPE_LATEST)

    return app


def _authorizer(token: SecretStr | None) -> Callable[..., None]:
    expected = token.get_secret_value().encode() if token is not None else None

    def authorize(
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
    ) -> None:
        if expected is None:  # --insecure-no-auth
            return
        given = credentials.credentials.encode() if credentials is not None else b""
        if not hmac.compare_digest(given, expected):
            raise HTTPException(
                401, "missing or invalid bearer token", headers={"WWW-Authenticate": "Bearer"}
            )

    return authorize


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
