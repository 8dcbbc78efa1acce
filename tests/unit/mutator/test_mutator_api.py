"""The mutator's HTTP API through FastAPI's TestClient, over in-memory fakes."""

from __future__ import annotations

import re
import threading
import warnings
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from plowline_core.errors import TransientError
from plowline_core.iglu.config import HttpConnection, RepositoryRef
from plowline_core.iglu.key import SchemaKey
from plowline_core.iglu.resolver import Resolver
from plowline_core.schema.entity import ColumnMode
from plowline_core.schema.field import Field, FieldType, Mode
from plowline_core.testing.clock import FixedClock
from plowline_core.testing.registry import InMemoryRegistry
from plowline_core.testing.table import InMemoryTableSchemaStore
from plowline_mutator.api import ApiContext, create_app
from plowline_mutator.api_models import SCHEMA_URI_PATTERN
from plowline_mutator.metrics import MutatorMetrics
from plowline_mutator.mutation import Mutator
from pydantic import SecretStr
from starlette.exceptions import StarletteDeprecationWarning

with warnings.catch_warnings():
    # Starlette asks for the httpx2 package, which is not installed; httpx works.
    warnings.simplefilter("ignore", StarletteDeprecationWarning)
    from fastapi.testclient import TestClient

TOKEN = "s3cret-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
URI = "iglu:com.acme/link_click/jsonschema/1-0-0"
SCHEMAS: dict[SchemaKey, dict[str, Any]] = {
    SchemaKey.parse(URI): {"type": "object", "properties": {"targetUrl": {"type": "string"}}},
}
COLUMN = {
    "name": "unstruct_event_com_acme_link_click_1_0_0",
    "type": "RECORD",
    "mode": "NULLABLE",
    "fields": [{"name": "target_url", "type": "STRING", "mode": "NULLABLE"}],
}
BODY = {"schema": URI, "shredProperty": "UNSTRUCT_EVENT"}


class Api:
    """A TestClient over the app factory, with the fakes behind it."""

    def __init__(self, token: str | None = TOKEN, ready: bool = True) -> None:
        self.registry = InMemoryRegistry("mem", SCHEMAS)
        ref = RepositoryRef("mem", 0, (), HttpConnection("http://127.0.0.1:1"))
        resolver = Resolver([(ref, self.registry)], FixedClock(datetime(2026, 1, 1, tzinfo=UTC)), 0)
        self.store = InMemoryTableSchemaStore([Field("event_id", FieldType.STRING, Mode.REQUIRED)])
        mutator = Mutator(resolver, self.store, ColumnMode.FULL, threading.Lock())
        secret = SecretStr(token) if token is not None else None
        context = ApiContext(mutator, self.store, MutatorMetrics(), secret, lambda: ready)
        self.client = TestClient(create_app(context))


@pytest.fixture
def api() -> Api:
    """An API with a token and an empty registry outage."""
    return Api()


def test_post_adds_the_column(api: Api) -> None:
    """A new schema gives 201 and the BigQuery field added."""
    response = api.client.post("/v1/columns", json=BODY, headers=AUTH)
    expected = (201, COLUMN)
    assert expected == (response.status_code, response.json())


def test_post_of_existing_column_answers_200(api: Api) -> None:
    """A column that already exists gives 200 and the field, with no second patch."""
    api.client.post("/v1/columns", json=BODY, headers=AUTH)
    response = api.client.post("/v1/columns", json=BODY, headers=AUTH)
    expected = (200, COLUMN, 1)
    assert expected == (response.status_code, response.json(), len(api.store.patches))


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param({}, id="missing"),
        pytest.param({"Authorization": "Bearer wrong"}, id="wrong-token"),
        pytest.param({"Authorization": f"Basic {TOKEN}"}, id="wrong-scheme"),
    ],
)
def test_post_without_the_token_is_refused(api: Api, headers: dict[str, str]) -> None:
    """A missing, wrong or non-Bearer credential gives 401 and changes nothing."""
    response = api.client.post("/v1/columns", json=BODY, headers=headers)
    expected: tuple[int, list[object]] = (401, [])
    assert expected == (response.status_code, api.store.patches)


def test_insecure_mode_needs_no_token() -> None:
    """Without a configured token (--insecure-no-auth) the route is open."""
    response = Api(token=None).client.post("/v1/columns", json=BODY)
    expected = 201
    assert expected == response.status_code


def test_post_of_unknown_schema_answers_404(api: Api) -> None:
    """A schema no repository has gives 404."""
    body = {"schema": "iglu:com.acme/nowhere/jsonschema/1-0-0", "shredProperty": "CONTEXTS"}
    response = api.client.post("/v1/columns", json=body, headers=AUTH)
    expected = 404
    assert expected == response.status_code


@pytest.mark.parametrize(
    "body",
    [
        pytest.param({"schema": "iglu:com.acme/x", "shredProperty": "CONTEXTS"}, id="bad-uri"),
        pytest.param({"schema": "DROP TABLE events", "shredProperty": "CONTEXTS"}, id="sql"),
        pytest.param({"schema": URI, "shredProperty": "ATOMIC"}, id="bad-property"),
        pytest.param({"schema": URI}, id="no-property"),
        pytest.param({**BODY, "name": "x"}, id="extra-key"),
    ],
)
def test_post_of_malformed_request_answers_422(api: Api, body: dict[str, str]) -> None:
    """A malformed URI or shred property gives 422 and changes nothing."""
    response = api.client.post("/v1/columns", json=body, headers=AUTH)
    expected: tuple[int, list[object]] = (422, [])
    assert expected == (response.status_code, api.store.patches)


def test_post_while_registry_fails_answers_503(api: Api) -> None:
    """A failing registry gives 503 with Retry-After."""
    api.registry.failing = True
    response = api.client.post("/v1/columns", json=BODY, headers=AUTH)
    expected = (503, "5")
    assert expected == (response.status_code, response.headers.get("retry-after"))


def test_post_while_bigquery_fails_answers_503(api: Api) -> None:
    """A failing table backend gives 503."""
    api.store.fail_with = TransientError("bigquery is down")
    response = api.client.post("/v1/columns", json=BODY, headers=AUTH)
    expected = 503
    assert expected == response.status_code


def test_get_columns_lists_entity_columns_with_their_schema(api: Api) -> None:
    """Listed columns carry the schema URI they were built from."""
    api.client.post("/v1/columns", json=BODY, headers=AUTH)
    listed = api.client.get("/v1/columns", headers=AUTH).json()
    expected = [(item["column"], item["schema"]) for item in listed]
    assert expected == [(COLUMN["name"], URI)]


def test_preview_returns_the_column_without_writing(api: Api) -> None:
    """Preview gives the column and patches nothing."""
    response = api.client.get(
        "/v1/columns/preview",
        params={"schema": URI, "shredProperty": "UNSTRUCT_EVENT"},
        headers=AUTH,
    )
    expected: tuple[int, object, list[object]] = (200, COLUMN, [])
    assert expected == (response.status_code, response.json(), api.store.patches)


def test_preview_of_malformed_uri_answers_422(api: Api) -> None:
    """Preview of a malformed URI gives 422."""
    response = api.client.get(
        "/v1/columns/preview",
        params={"schema": "nope", "shredProperty": "CONTEXTS"},
        headers=AUTH,
    )
    expected = 422
    assert expected == response.status_code


@pytest.mark.parametrize(
    "uri",
    [
        pytest.param("iglu:../secret/jsonschema/1-0-0", id="vendor-dot-dot"),
        pytest.param("iglu:./secret/jsonschema/1-0-0", id="vendor-dot"),
    ],
)
def test_preview_of_a_vendor_of_dots_answers_422_and_asks_no_registry(api: Api, uri: str) -> None:
    """A vendor ``..`` (which would climb out of a registry's schemas/) is refused up front."""
    response = api.client.get(
        "/v1/columns/preview", params={"schema": uri, "shredProperty": "CONTEXTS"}, headers=AUTH
    )
    expected = (422, [])
    assert expected == (response.status_code, api.registry.looked_up)


@pytest.mark.parametrize(
    ("ready", "status"), [pytest.param(True, 200, id="ready"), pytest.param(False, 503, id="not")]
)
def test_readyz_follows_readiness(ready: bool, status: int) -> None:
    """/readyz answers 200 when ready and 503 otherwise."""
    assert status == Api(ready=ready).client.get("/readyz").status_code


def test_metrics_count_added_columns(api: Api) -> None:
    """/metrics exposes the columns-added counter after an addition."""
    api.client.post("/v1/columns", json=BODY, headers=AUTH)
    text = api.client.get("/metrics").text
    assert 'plowline_mutator_columns_added_total{source="http"} 1.0' in text


def test_openapi_documents_the_columns_route(api: Api) -> None:
    """The OpenAPI document lists POST /v1/columns with bearer security."""
    document = api.client.get("/openapi.json", headers=AUTH).json()
    assert ({"post", "get"}, ["HTTPBearer"]) == (
        set(document["paths"]["/v1/columns"]),
        list(document["components"]["securitySchemes"]),
    )


@given(vendor=st.text(alphabet="a.-_/", min_size=1, max_size=8))
def test_the_uri_pattern_accepts_exactly_the_vendors_schema_key_parses(vendor: str) -> None:
    """SCHEMA_URI_PATTERN and SchemaKey.parse agree on every vendor (dots only refused)."""
    uri = f"iglu:{vendor}/name/jsonschema/1-0-0"
    try:
        SchemaKey.parse(uri)
        parsed = True
    except ValueError:
        parsed = False
    assert parsed == (re.match(SCHEMA_URI_PATTERN, uri) is not None)
