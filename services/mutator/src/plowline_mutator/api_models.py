"""The request and response bodies of the mutator's API, as its OpenAPI document states them.

Every route declares each status it can answer with one of these models, so the served
``/openapi.json`` describes the API exactly (schemathesis checks it in CI).

Notes:
    ``SCHEMA_URI_PATTERN`` is the pattern ``SchemaKey.parse`` accepts, written so that
    JSON Schema (ECMA regex) and pydantic read it alike; the request models validate with
    it, so a URI the document calls valid is never refused as malformed.
"""

from __future__ import annotations

from typing import Any

from plowline_core.iglu.key import SchemaKey
from plowline_core.schema.entity import EntityType, ShredProperty
from plowline_core.schema.field import Mode
from pydantic import BaseModel, ConfigDict
from pydantic import Field as Body

#: A vendor holds a character other than "." (SchemaKey refuses ".." and the like).
SCHEMA_URI_PATTERN = (
    r"^iglu:[a-zA-Z0-9_.-]*[a-zA-Z0-9_-][a-zA-Z0-9_.-]*/[a-zA-Z0-9_-]+/[a-zA-Z0-9_-]+/"
    r"(0|[1-9][0-9]*)-(0|[1-9][0-9]*)-(0|[1-9][0-9]*)$"
)
SCHEMA_URI_EXAMPLE = "iglu:com.snowplowanalytics.snowplow/link_click/jsonschema/1-0-1"
#: Longer than any real URI; keeps SchemaVer numbers far below Python's int-parsing limit.
MAX_URI_LENGTH = 1024


class ColumnRequest(BaseModel):
    """Add the column of one (schema, shred property) pair."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    schema_uri: str = Body(
        alias="schema",
        pattern=SCHEMA_URI_PATTERN,
        max_length=MAX_URI_LENGTH,
        description="iglu:vendor/name/format/MODEL-REVISION-ADDITION",
        examples=[SCHEMA_URI_EXAMPLE],
    )
    shred_property: ShredProperty = Body(
        alias="shredProperty", description="where the entity sits in the event"
    )

    def entity(self) -> EntityType:
        """Return the entity type asked for."""
        return EntityType(SchemaKey.parse(self.schema_uri), self.shred_property)


class ColumnField(BaseModel):
    """A BigQuery column or nested field in the REST API's schema JSON."""

    name: str
    type: str = Body(description="BigQuery type (legacy names: STRING, INTEGER, RECORD, ...)")
    mode: Mode
    fields: list[ColumnField] | None = Body(
        default=None, description="sub-fields; present for RECORD only"
    )


class ColumnDescription(BaseModel):
    """One entity column of the table and what its name says of its schema."""

    model_config = ConfigDict(populate_by_name=True)

    column: str
    shred_property: ShredProperty = Body(alias="shredProperty")
    schema_uri: str | None = Body(
        alias="schema", description="the exact schema, when this process built the column"
    )
    vendor_and_name: str = Body(alias="vendorAndName")
    version: str | None = Body(description="M-R-A (full column mode) or M (major mode)")
    field: ColumnField


class Problem(BaseModel):
    """Why a request was refused or failed."""

    detail: str


class InvalidRequest(BaseModel):
    """A malformed request: FastAPI's list of problems, or one sentence."""

    detail: str | list[dict[str, Any]]


class Health(BaseModel):
    """The process is alive."""

    status: str


class Readiness(BaseModel):
    """Whether the mutator is ready (its listener runs) and which Iglu registries fail."""

    ready: bool
    registries: list[dict[str, Any]] = Body(
        description="each Iglu registry in an outage: name, since when, last error"
    )


#: A FastAPI ``responses`` mapping: status to OpenAPI entry.
Responses = dict[int | str, dict[str, Any]]


def problem(description: str, headers: dict[str, Any] | None = None) -> dict[str, Any]:
    """Return an OpenAPI ``responses`` entry for a ``Problem`` answer."""
    entry: dict[str, Any] = {"model": Problem, "description": description}
    if headers:
        entry["headers"] = headers
    return entry


_RETRY_AFTER = {"Retry-After": {"description": "seconds to wait", "schema": {"type": "string"}}}
_AUTHENTICATE = {"WWW-Authenticate": {"description": "Bearer", "schema": {"type": "string"}}}
UNAUTHORIZED: Responses = {401: problem("missing or invalid bearer token", _AUTHENTICATE)}
TOO_LARGE: Responses = {413: problem("request body over the server's limit (--max-body-bytes)")}
INVALID: Responses = {422: {"model": InvalidRequest, "description": "malformed request"}}
UNAVAILABLE: Responses = {503: problem("Iglu or BigQuery failing; retry later", _RETRY_AFTER)}
REFUSED: Responses = {502: problem("BigQuery refused the table operation")}
