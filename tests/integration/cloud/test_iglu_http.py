"""Specification of HttpRegistry and the resolver over it, against real HTTP servers on 127.0.0.1."""

from __future__ import annotations

import pickle
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from plowline_cloud.iglu import HttpRegistry, load_resolver
from plowline_core.badrows import IgluErrorRow
from plowline_core.errors import RegistryUnavailable
from plowline_core.iglu.config import HttpConnection, RepositoryRef
from plowline_core.iglu.key import SchemaKey
from plowline_core.iglu.outage import RegistryOutage
from plowline_core.iglu.resolver import ResolvedSchema, Resolver, SchemaNotFound
from plowline_core.schema.entity import ColumnMode
from plowline_core.testing.clock import FixedClock
from plowline_core.testing.tsv import enriched_line
from plowline_core.transform.row import RowBuilder
from support.configs import http, resolver_config, write_json

T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
KEY = SchemaKey.parse("iglu:com.acme/checkout_started/jsonschema/1-0-0")
PATH = "/api/schemas/com.acme/checkout_started/jsonschema/1-0-0"
HANG = -1  # a status meaning "never answer"
TRICKLE = -2  # a status meaning "200, then the body one byte every 50 ms"


@dataclass
class _Script:
    """What the server answers per path (a list of replies; the last one repeats)."""

    replies: dict[str, list[tuple[int, bytes]]] = field(default_factory=dict)
    seen: list[tuple[str, str | None]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
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
        script.headers.append({name.lower(): value for name, value in self.headers.items()})
        status, body = script.reply(self.path)
        if status == HANG:
            script.release.wait(10)
            return
        if status == TRICKLE:
            self._trickle(body, script.release)
            return
        self.send_response(status)
        if 300 <= status < 400:  # a redirect's body is its Location
            self.send_header("Location", body.decode())
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _trickle(self, body: bytes, release: threading.Event) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        for byte in body:
            if release.wait(0.05):
                return
            try:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
            except OSError:  # the client gave up
                return

    def log_message(self, format: str, *args: object) -> None:
        """Keep test output quiet."""


def _start() -> tuple[_Server, threading.Thread]:
    httpd = _Server(("127.0.0.1", 0), _Handler)
    httpd.script = _Script()
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    return httpd, thread


def _stop(httpd: _Server, thread: threading.Thread) -> None:
    httpd.script.release.set()
    httpd.shutdown()
    httpd.server_close()
    thread.join(5)


@pytest.fixture(scope="module")
def server() -> Iterator[_Server]:
    """A threaded HTTP server on a free loopback port."""
    httpd, thread = _start()
    yield httpd
    _stop(httpd, thread)


@pytest.fixture
def elsewhere() -> Iterator[_Server]:
    """A second server (another port, so another origin) that records what it is sent."""
    httpd, thread = _start()
    yield httpd
    _stop(httpd, thread)


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


def _base(server: _Server) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


def test_403_is_none_when_listed_as_not_found(server: _Server, script: _Script) -> None:
    """A static registry answering 403 for a missing file says "not found", asked once."""
    script.replies[PATH] = [(403, b"<Error><Code>AccessDenied</Code></Error>")]
    with HttpRegistry("static", f"{_base(server)}/api", not_found=frozenset({403})) as registry:
        expected = (None, 1)
        assert expected == (registry.lookup(KEY), len(script.seen))


def test_a_403_not_listed_names_the_setting_that_fixes_it(
    registry: HttpRegistry, script: _Script
) -> None:
    """A 403 that is not "not found" for the registry says which setting would make it so."""
    script.replies[PATH] = [(403, b"{}")]
    with pytest.raises(
        RegistryUnavailable, match="add 'test=403' to the service's --iglu-not-found"
    ):
        registry.lookup(KEY)


def test_the_apikey_does_not_follow_a_redirect_to_another_host(
    server: _Server, script: _Script, elsewhere: _Server
) -> None:
    """A redirect to another origin is followed without the apikey header."""
    target = f"{_base(elsewhere)}/mirror/{KEY.to_path()}"
    script.replies[PATH] = [(302, target.encode())]
    elsewhere.script.replies[f"/mirror/{KEY.to_path()}"] = [(200, b'{"type": "object"}')]
    with HttpRegistry("test", f"{_base(server)}/api", apikey="s3cret") as registry:
        schema = registry.lookup(KEY)
    expected = ({"type": "object"}, ["s3cret"], [None])
    actual = (
        schema,
        [apikey for _, apikey in script.seen],
        [headers.get("apikey") for headers in elsewhere.script.headers],
    )
    assert expected == actual


def test_the_apikey_follows_a_redirect_on_the_same_origin(server: _Server, script: _Script) -> None:
    """A redirect within the registry's own scheme, host and port keeps the apikey."""
    script.replies[PATH] = [(301, b"/v2/schema.json")]
    script.replies["/v2/schema.json"] = [(200, b'{"type": "object"}')]
    with HttpRegistry("test", f"{_base(server)}/api", apikey="s3cret") as registry:
        registry.lookup(KEY)
    expected = ["s3cret", "s3cret"]
    assert expected == [apikey for _, apikey in script.seen]


def test_a_redirect_loop_is_unavailable(server: _Server, script: _Script) -> None:
    """A registry that redirects to itself forever is unavailable, after a bounded number of hops."""
    script.replies[PATH] = [(302, PATH.encode())]
    with (
        HttpRegistry("loop", f"{_base(server)}/api", retries=0) as registry,
        pytest.raises(RegistryUnavailable, match="more than 5 redirects"),
    ):
        registry.lookup(KEY)
    expected = 6
    assert expected == len(script.seen)


def test_a_403_static_registry_makes_an_unknown_schema_a_bad_row(
    server: _Server, script: _Script, tmp_path: Path
) -> None:
    """An event whose schema a no-apikey registry answers 403 for is a loader_iglu_error bad row."""
    script.replies[PATH] = [(403, b"<Error><Code>AccessDenied</Code></Error>")]
    path = write_json(
        tmp_path / "resolver.json", resolver_config(http(name="static", uri=f"{_base(server)}/api"))
    )
    resolver = load_resolver(path, FixedClock(T0))
    line = enriched_line(unstruct_event=(KEY.to_uri(), {"x": 1}))
    row = RowBuilder(resolver, ColumnMode.FULL).transform_line(line)
    assert isinstance(row, IgluErrorRow)
    expected = ("iglu.resolution", "NotFound", ())
    failure = row.failures[0]["error"]["lookupHistory"][0]["errors"][0]["error"]
    assert expected == (row.code.value, failure, resolver.outages.current())


def test_a_403_from_a_registry_with_an_apikey_holds_the_event_back(
    server: _Server, script: _Script, tmp_path: Path
) -> None:
    """With an apikey, a 403 is a wrong key: RegistryUnavailable, never a bad row."""
    script.replies[PATH] = [(403, b"{}")]
    repository = http(name="server", uri=f"{_base(server)}/api", apikey="wrong")
    resolver = load_resolver(
        write_json(tmp_path / "resolver.json", resolver_config(repository)), FixedClock(T0)
    )
    line = enriched_line(unstruct_event=(KEY.to_uri(), {"x": 1}))
    with pytest.raises(RegistryUnavailable, match="apikey is wrong"):
        RowBuilder(resolver, ColumnMode.FULL).transform_line(line)


def test_the_not_found_setting_makes_403_not_found_for_a_keyed_registry(
    server: _Server, script: _Script, tmp_path: Path
) -> None:
    """The per-repository override takes precedence over the apikey default."""
    script.replies[PATH] = [(403, b"{}")]
    repository = http(name="server", uri=f"{_base(server)}/api", apikey="k")
    path = write_json(tmp_path / "resolver.json", resolver_config(repository))
    resolver = load_resolver(path, FixedClock(T0), not_found={"server": frozenset({403})})
    assert isinstance(resolver.resolve(KEY), SchemaNotFound)


def _resolver_over(registry: HttpRegistry, clock: FixedClock) -> Resolver:
    ref = RepositoryRef(registry.name, 0, (), HttpConnection(registry.uri))
    return Resolver([(ref, registry)], clock, cache_size=0)


def test_a_hanging_registry_is_an_outage_within_the_bound(server: _Server, script: _Script) -> None:
    """A registry that never answers costs a lookup about (retries + 1) x timeout, then shows as an outage."""
    script.replies[PATH] = [(HANG, b"")]
    clock = FixedClock(T0)
    registry = HttpRegistry(
        "slow", f"{_base(server)}/api", timeout=0.3, retries=1, sleep=lambda _: None
    )
    with registry:
        resolver = _resolver_over(registry, clock)
        started = time.monotonic()
        with pytest.raises(RegistryUnavailable, match="ReadTimeout"):
            resolver.resolve(KEY)
        elapsed = time.monotonic() - started
    outages = resolver.outages.current()
    expected = (True, ("slow",), True)
    actual = (
        elapsed < 2.0,
        tuple(outage.repository for outage in outages),
        "ReadTimeout" in outages[0].last_error,
    )
    assert expected == actual


def test_a_registry_that_500s_then_recovers_ends_its_outage(
    server: _Server, script: _Script
) -> None:
    """500s make an outage (since the first failure); the first answer after them ends it."""
    script.replies[PATH] = [(500, b"{}"), (500, b"{}"), (500, b"{}"), (200, b'{"type": "object"}')]
    clock = FixedClock(T0)
    registry = HttpRegistry("flaky", f"{_base(server)}/api", retries=1, sleep=lambda _: None)
    with registry:
        resolver = _resolver_over(registry, clock)
        with pytest.raises(RegistryUnavailable):
            resolver.resolve(KEY)
        during = resolver.outages.current()
        clock.advance(60)
        resolution = resolver.resolve(KEY)
    error = f"flaky: GET {_base(server)}{PATH} answered 500 (gave up after 2 attempts)"
    expected = ((RegistryOutage("flaky", T0, T0, error),), True, (), 4)
    actual = (
        during,
        isinstance(resolution, ResolvedSchema),
        resolver.outages.current(),
        len(script.seen),
    )
    assert expected == actual


def test_an_unpickled_copy_keeps_the_not_found_statuses(server: _Server, script: _Script) -> None:
    """A Spark executor's copy takes a 403 as not found when the driver's did."""
    script.replies[PATH] = [(403, b"{}")]
    original = HttpRegistry("static", f"{_base(server)}/api", not_found=frozenset({403}))
    with original, pickle.loads(pickle.dumps(original)) as copy:
        assert copy.lookup(KEY) is None


def test_a_registry_that_trickles_its_body_is_cut_off(server: _Server, script: _Script) -> None:
    """A body still arriving after twice the timeout fails the attempt (a read timeout alone would not)."""
    script.replies[PATH] = [(TRICKLE, b'{"type": "object", "description": "' + b"x" * 60 + b'"}')]
    registry = HttpRegistry("slow", f"{_base(server)}/api", timeout=0.3, retries=0)
    started = time.monotonic()
    with registry, pytest.raises(RegistryUnavailable, match=r"still sending after 0\.6 s"):
        registry.lookup(KEY)
    expected = True
    assert expected == (time.monotonic() - started < 1.5)


def test_a_body_over_the_limit_is_refused(server: _Server, script: _Script) -> None:
    """A 200 whose body is larger than any schema is retried, then unavailable."""
    script.replies[PATH] = [(200, b" " * (5 * 1024 * 1024))]
    registry = HttpRegistry("big", f"{_base(server)}/api", retries=1, sleep=lambda _: None)
    with registry, pytest.raises(RegistryUnavailable, match="sent more than 4194304 bytes"):
        registry.lookup(KEY)
    expected = 2
    assert expected == len(script.seen)
