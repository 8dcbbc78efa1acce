"""Specification of HttpRegistry against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import pickle
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from plowline_cloud.iglu import HttpRegistry
from plowline_core.errors import RegistryUnavailable
from plowline_core.iglu.key import SchemaKey

KEY = SchemaKey.parse("iglu:com.acme/checkout_started/jsonschema/1-0-0")
PATH = "/api/schemas/com.acme/checkout_started/jsonschema/1-0-0"
HANG = -1  # a status meaning "never answer"


@dataclass
class _Script:
    """What the server answers per path (a list of replies; the last one repeats)."""

    replies: dict[str, list[tuple[int, bytes]]] = field(default_factory=dict)
    seen: list[tuple[str, str | None]] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)

    def reply(self, path: str) -> tuple[int, bytes]:
        queue = self.replies.get(path, [(404, b'{"message":"not found"}')])
        return queue.pop(0) if len(queue) > 1 else queue[0]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    script: _Script


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        script = self.server.script
        script.seen.append((self.path, self.headers.get("apikey")))
        status, body = script.reply(self.path)
        if status == HANG:
            script.release.wait(10)
            return
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Keep test output quiet."""


@pytest.fixture(scope="module")
def server() -> Iterator[_Server]:
    """A threaded HTTP server on a free loopback port."""
    httpd = _Server(("127.0.0.1", 0), _Handler)
    httpd.script = _Script()
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.script.release.set()
    httpd.shutdown()
    httpd.server_close()
    thread.join(5)


@pytest.fixture
def script(server: _Server) -> Iterator[_Script]:
    """A fresh script for one test; hanging handlers are released afterwards."""
    server.script = _Script()
    yield server.script
    server.script.release.set()


@pytest.fixture
def sleeps() -> list[float]:
    """The backoff waits a registry asked for (nothing sleeps for real)."""
    return []


@pytest.fixture
def registry(server: _Server, sleeps: list[float]) -> Iterator[HttpRegistry]:
    """A registry on the test server with two retries and a recorded sleep."""
    uri = f"http://127.0.0.1:{server.server_address[1]}/api/"
    with HttpRegistry("test", uri, timeout=2.0, retries=2, sleep=sleeps.append) as built:
        yield built


def test_returns_the_schema_on_200(registry: HttpRegistry, script: _Script) -> None:
    """A 200 with a JSON object is the schema."""
    script.replies[PATH] = [(200, b'{"type": "object"}')]
    expected = {"type": "object"}
    assert expected == registry.lookup(KEY)


def test_requests_the_iglu_path_under_the_uri(registry: HttpRegistry, script: _Script) -> None:
    """The GET path is {uri}/schemas/{vendor}/{name}/{format}/{version}, trailing slash ignored."""
    registry.lookup(KEY)
    expected = [PATH]
    assert expected == [path for path, _ in script.seen]


def test_sends_no_apikey_when_none_is_set(registry: HttpRegistry, script: _Script) -> None:
    """Without an apikey no apikey header is sent."""
    registry.lookup(KEY)
    expected = [None]
    assert expected == [apikey for _, apikey in script.seen]


def test_sends_the_apikey_header(server: _Server, script: _Script) -> None:
    """The apikey goes in the `apikey` header."""
    uri = f"http://127.0.0.1:{server.server_address[1]}/api"
    with HttpRegistry("test", uri, apikey="s3cret") as registry:
        registry.lookup(KEY)
    expected = ["s3cret"]
    assert expected == [apikey for _, apikey in script.seen]


def test_404_is_none_without_retry(registry: HttpRegistry, script: _Script) -> None:
    """A 404 means the registry does not have the schema; it is asked once."""
    expected = (None, 1)
    assert expected == (registry.lookup(KEY), len(script.seen))


@pytest.mark.parametrize("status", [500, 502, 503, 429])
def test_server_errors_are_retried_then_unavailable(
    registry: HttpRegistry, script: _Script, status: int
) -> None:
    """5xx and 429 are tried three times (two retries), then RegistryUnavailable."""
    script.replies[PATH] = [(status, b"{}")]
    with pytest.raises(RegistryUnavailable, match=f"answered {status}"):
        registry.lookup(KEY)
    expected = 3
    assert expected == len(script.seen)


def test_backoff_doubles(registry: HttpRegistry, script: _Script, sleeps: list[float]) -> None:
    """The waits between attempts double from the backoff."""
    script.replies[PATH] = [(500, b"{}")]
    with pytest.raises(RegistryUnavailable):
        registry.lookup(KEY)
    expected = [0.2, 0.4]
    assert expected == sleeps


def test_a_retry_can_succeed(registry: HttpRegistry, script: _Script) -> None:
    """A 503 followed by a 200 returns the schema."""
    script.replies[PATH] = [(503, b""), (200, b'{"type": "object"}')]
    expected = {"type": "object"}
    assert expected == registry.lookup(KEY)


@pytest.mark.parametrize("status", [401, 403])
def test_auth_failures_blame_the_apikey_without_retry(
    registry: HttpRegistry, script: _Script, status: int
) -> None:
    """401/403 say the apikey is wrong, after a single request."""
    script.replies[PATH] = [(status, b"{}")]
    with pytest.raises(RegistryUnavailable, match="apikey is wrong"):
        registry.lookup(KEY)
    expected = 1
    assert expected == len(script.seen)


def test_other_client_errors_are_not_retried(registry: HttpRegistry, script: _Script) -> None:
    """A 400 is unavailable at once."""
    script.replies[PATH] = [(400, b"{}")]
    with pytest.raises(RegistryUnavailable, match="answered 400"):
        registry.lookup(KEY)
    expected = 1
    assert expected == len(script.seen)


@pytest.mark.parametrize(
    "body", [pytest.param(b"{not json", id="invalid"), pytest.param(b"[1, 2]", id="array")]
)
def test_a_body_that_is_not_a_json_object_is_unavailable(
    registry: HttpRegistry, script: _Script, body: bytes
) -> None:
    """A 200 whose body is not a JSON object is retried, then unavailable."""
    script.replies[PATH] = [(200, body)]
    with pytest.raises(RegistryUnavailable, match="gave up after 3 attempts"):
        registry.lookup(KEY)


def test_a_hanging_server_times_out(server: _Server, script: _Script) -> None:
    """A server that never answers is unavailable after the timeout and the retries."""
    script.replies[PATH] = [(HANG, b"")]
    uri = f"http://127.0.0.1:{server.server_address[1]}/api"
    registry = HttpRegistry("slow", uri, timeout=0.2, retries=1, sleep=lambda _: None)
    with registry, pytest.raises(RegistryUnavailable, match="ReadTimeout"):
        registry.lookup(KEY)
    expected = 2
    assert expected == len(script.seen)


def test_connection_refused_is_unavailable() -> None:
    """A port nobody listens on is unavailable."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with (
        HttpRegistry(
            "gone", f"http://127.0.0.1:{port}", retries=1, sleep=lambda _: None
        ) as registry,
        pytest.raises(RegistryUnavailable, match="ConnectError"),
    ):
        registry.lookup(KEY)


def test_pickles_as_its_settings(registry: HttpRegistry, script: _Script) -> None:
    """An unpickled copy (a Spark executor's) talks to the same registry."""
    script.replies[PATH] = [(200, b'{"type": "object"}')]
    with pickle.loads(pickle.dumps(registry)) as copy:
        expected = ("test", {"type": "object"})
        assert expected == (copy.name, copy.lookup(KEY))
