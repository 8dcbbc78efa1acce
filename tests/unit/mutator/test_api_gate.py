"""The API's gate: token before body, the body limit, and which routes need the token."""

from __future__ import annotations

import asyncio
import threading
import warnings
from collections.abc import Iterator, MutableMapping
from datetime import UTC, datetime
from typing import Any

import pytest
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
from plowline_mutator.gate import Access, AccessGate
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
LONG = f"iglu:com.{'v' * 300}/thing/jsonschema/1-0-0"
SCHEMAS: dict[SchemaKey, dict[str, Any]] = {
    SchemaKey.parse(URI): {"type": "object", "properties": {"targetUrl": {"type": "string"}}},
    SchemaKey.parse(LONG): {"type": "object", "properties": {"a": {"type": "string"}}},
}
PREVIEW = {"schema": URI, "shredProperty": "UNSTRUCT_EVENT"}


def client(
    open_reads: bool = False, table: tuple[Field, ...] = (), max_body_bytes: int = 65536
) -> TestClient:
    """Return a TestClient over the gated API and in-memory fakes."""
    registry = InMemoryRegistry("mem", SCHEMAS)
    ref = RepositoryRef("mem", 0, (), HttpConnection("http://127.0.0.1:1"))
    resolver = Resolver([(ref, registry)], FixedClock(datetime(2026, 1, 1, tzinfo=UTC)), 0)
    store = InMemoryTableSchemaStore((Field("event_id", FieldType.STRING, Mode.REQUIRED), *table))
    mutator = Mutator(resolver, store, ColumnMode.FULL, threading.Lock())
    context = ApiContext(
        mutator,
        store,
        MutatorMetrics(),
        SecretStr(TOKEN),
        open_reads=open_reads,
        max_body_bytes=max_body_bytes,
    )
    return TestClient(create_app(context))


@pytest.mark.parametrize(
    ("path", "params"),
    [
        pytest.param("/v1/columns", None, id="list"),
        pytest.param("/v1/columns/preview", PREVIEW, id="preview"),
        pytest.param("/openapi.json", None, id="document"),
    ],
)
def test_read_routes_need_the_token(path: str, params: dict[str, str] | None) -> None:
    """GET routes answer 401 without the token and 200 with it."""
    api = client()
    anonymous = api.get(path, params=params).status_code
    authorized = api.get(path, params=params, headers=AUTH).status_code
    assert (anonymous, authorized) == (401, 200)


def test_open_read_access_opens_reads_but_not_writes() -> None:
    """With open reads an anonymous GET works and an anonymous POST is still refused."""
    api = client(open_reads=True)
    statuses = (
        api.get("/v1/columns/preview", params=PREVIEW).status_code,
        api.post("/v1/columns", json=PREVIEW).status_code,
    )
    assert statuses == (200, 401)


@pytest.mark.parametrize("path", ["/healthz", "/readyz", "/metrics"])
def test_probes_need_no_token(path: str) -> None:
    """Liveness, readiness and metrics answer 200 without a token."""
    assert client().get(path).status_code == 200


def test_unauthorized_answer_names_the_scheme() -> None:
    """A 401 carries WWW-Authenticate: Bearer and says what to send."""
    response = client().post("/v1/columns", json=PREVIEW)
    expected = (401, "Bearer", True)
    assert expected == (
        response.status_code,
        response.headers.get("www-authenticate"),
        "Authorization: Bearer" in response.json()["detail"],
    )


def test_body_over_the_limit_is_refused_with_413() -> None:
    """A body one byte over the limit, with the token, gets 413."""
    api = client(max_body_bytes=1024)
    response = api.post(
        "/v1/columns", content=b" " * 1025, headers={**AUTH, "content-type": "application/json"}
    )
    assert response.status_code == 413


@pytest.mark.parametrize(
    ("uri", "table", "status"),
    [
        pytest.param(LONG, (), 422, id="illegal-name-422"),
        pytest.param(
            URI,
            tuple(Field(f"c{i}", FieldType.STRING) for i in range(9999)),
            409,
            id="column-limit-409",
        ),
    ],
)
def test_post_of_a_column_the_table_cannot_take(
    uri: str, table: tuple[Field, ...], status: int
) -> None:
    """An illegal column name answers 422 and a full table 409, each with the reason."""
    response = client(table=table).post(
        "/v1/columns", json={"schema": uri, "shredProperty": "CONTEXTS"}, headers=AUTH
    )
    assert (status, True) == (
        response.status_code,
        response.json()["detail"].startswith(("illegal_name", "column_limit")),
    )


# -- the gate as ASGI: what it reads ------------------------------------------------------

Message = MutableMapping[str, Any]


class Exchange:
    """One ASGI request fed chunk by chunk, recording what the gate read and answered."""

    def __init__(self, headers: list[tuple[bytes, bytes]], chunks: list[bytes]) -> None:
        self.scope = {"type": "http", "method": "POST", "path": "/v1/columns", "headers": headers}
        self._chunks: Iterator[bytes] = iter(chunks)
        self._left = len(chunks)
        self.reads = 0
        self.sent: list[Message] = []
        self.app_called = False

    async def receive(self) -> Message:
        """Hand the gate the next chunk."""
        self.reads += 1
        self._left -= 1
        return {"type": "http.request", "body": next(self._chunks), "more_body": self._left > 0}

    async def send(self, message: Message) -> None:
        """Record what the gate answered."""
        self.sent.append(message)

    async def app(self, scope: Any, receive: Any, send: Any) -> None:
        """Play the API: note that the request got through."""
        self.app_called = True

    def run(self, access: Access) -> tuple[int | None, int, bool]:
        """Pass the request through the gate; return (status, chunks read, app reached)."""
        asyncio.run(AccessGate(self.app, access)(self.scope, self.receive, self.send))
        status = self.sent[0]["status"] if self.sent else None
        return status, self.reads, self.app_called


ACCESS = Access(TOKEN.encode(), max_body_bytes=1024)
BEARER = (b"authorization", f"Bearer {TOKEN}".encode())


def test_token_is_checked_before_any_body_byte_is_read() -> None:
    """An anonymous POST declaring 64 MiB is answered 401 with no chunk read."""
    exchange = Exchange([(b"content-length", str(64 << 20).encode())], [b"x" * 1024] * 8)
    assert exchange.run(ACCESS) == (401, 0, False)


def test_declared_length_over_the_limit_is_refused_unread() -> None:
    """A Content-Length over the limit is answered 413 before the body is read."""
    exchange = Exchange([BEARER, (b"content-length", b"1025")], [b"x" * 1025])
    assert exchange.run(ACCESS) == (413, 0, False)


def test_chunked_body_is_cut_off_once_past_the_limit() -> None:
    """A chunked body is refused with 413 at the chunk that passes the limit, not after all."""
    exchange = Exchange([BEARER, (b"transfer-encoding", b"chunked")], [b"x" * 600] * 100)
    assert exchange.run(ACCESS) == (413, 2, False)


def test_body_within_the_limit_reaches_the_app() -> None:
    """A body under the limit in several chunks is read whole and handed on."""
    exchange = Exchange([BEARER, (b"transfer-encoding", b"chunked")], [b"x" * 500] * 2)
    assert exchange.run(ACCESS) == (None, 2, True)


def test_preview_of_an_illegal_column_name_answers_422() -> None:
    """Preview of a schema whose column name passes 300 characters says illegal_name."""
    response = client().get(
        "/v1/columns/preview", params={"schema": LONG, "shredProperty": "CONTEXTS"}, headers=AUTH
    )
    assert (response.status_code, response.json()["detail"].startswith("illegal")) == (422, True)


def test_document_states_the_schema_pattern_and_the_gate_statuses() -> None:
    """The body's and the query's ``schema`` carry the pattern; protected routes list 401 and 413."""
    document = client().get("/openapi.json", headers=AUTH).json()
    body = document["components"]["schemas"]["ColumnRequest"]["properties"]["schema"]
    query = document["paths"]["/v1/columns/preview"]["get"]["parameters"][0]["schema"]
    operations = [
        document["paths"][path][method]["responses"]
        for path, method in (("/v1/columns", "post"), ("/v1/columns", "get"))
    ]
    expected = (True, [True, True])
    assert expected == (
        body.get("pattern") == query.get("pattern") == SCHEMA_URI_PATTERN,
        [{"401", "413"} <= set(responses) for responses in operations],
    )
