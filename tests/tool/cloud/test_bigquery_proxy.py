"""The BigQuery client's proxies from the environment, read once per endpoint, still apply.

``bigquery_client``'s session keeps requests' answer for the proxy variables per endpoint
(``read_environment_once``); a loopback server here plays the proxy, or the endpoint
itself when ``NO_PROXY`` names it, and records the request lines it is sent.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests
from plowline_cloud.clients import bigquery_client, read_environment_once
from plowline_cloud.row_sink import BigQueryRowSink
from plowline_core.ports import Row
from plowline_core.schema.field import Field, FieldType, Mode
from plowline_core.testing.table import InMemoryTableSchemaStore

FIELDS = (Field("event_id", FieldType.STRING, Mode.REQUIRED),)
REMOTE = "bigquery.proxied.test:9050"  # reachable only through the proxy (a .test name)


class _Recorder(BaseHTTPRequestHandler):
    """Answer every insertAll with no errors and record its request line."""

    protocol_version = "HTTP/1.1"
    lines: list[str]

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.lines.append(self.requestline)
        body = b'{"kind":"bigquery#tableDataInsertAllResponse"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[tuple[str, list[str]]]:
    """Return a loopback HTTP server's ``host:port`` and the request lines it received."""
    lines: list[str] = []
    handler = type("Handler", (_Recorder,), {"lines": lines})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"127.0.0.1:{httpd.server_address[1]}", lines
    httpd.shutdown()
    httpd.server_close()
    thread.join()


def _insert(endpoint: str) -> None:
    client = bigquery_client("p", f"http://{endpoint}")
    sink = BigQueryRowSink(client, "p.d.events", InMemoryTableSchemaStore(FIELDS))
    for n in range(2):  # the second request meets the kept answer
        failures = sink.insert([Row(f"e{n}", {"event_id": f"e{n}"})])
        assert not failures


def test_proxy_from_environment_carries_every_request(
    server: tuple[str, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An ``HTTP_PROXY`` set in the environment carries the first request and the next."""
    proxy, lines = server
    monkeypatch.setenv("HTTP_PROXY", f"http://{proxy}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)

    _insert(REMOTE)

    url = f"http://{REMOTE}/bigquery/v2/projects/p/datasets/d/tables/events/insertAll?prettyPrint=false"
    assert [f"POST {url} HTTP/1.1"] * 2 == lines


def test_no_proxy_from_environment_bypasses_the_proxy(
    server: tuple[str, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An endpoint ``NO_PROXY`` names is reached directly, on every request."""
    endpoint, lines = server
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # nothing listens: a use fails
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")

    _insert(endpoint)

    path = "/bigquery/v2/projects/p/datasets/d/tables/events/insertAll?prettyPrint=false"
    assert [f"POST {path} HTTP/1.1"] * 2 == lines


_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")


@pytest.mark.parametrize(
    "environment",
    [
        pytest.param({}, id="none"),
        pytest.param({"HTTPS_PROXY": "http://p:3128"}, id="https-proxy"),
        pytest.param({"HTTP_PROXY": "http://p:1", "NO_PROXY": "example.test"}, id="no-proxy"),
        pytest.param({"HTTPS_PROXY": "http://p:1", "NO_PROXY": "*"}, id="no-proxy-all"),
        pytest.param({"REQUESTS_CA_BUNDLE": "/etc/ca.pem"}, id="requests-ca"),
        pytest.param({"CURL_CA_BUNDLE": "/etc/curl.pem"}, id="curl-ca"),
    ],
)
@pytest.mark.parametrize(
    "url",
    [
        pytest.param("https://bigquery.googleapis.com/bigquery/v2/x", id="google"),
        pytest.param("http://example.test:9050/bigquery/v2/x", id="no-proxy-host"),
    ],
)
def test_settings_are_requests_own(
    environment: dict[str, str], url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Proxies, CA bundle, stream and cert merge as requests merges them, on every request."""
    for name in _VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    once = requests.Session()
    read_environment_once(once)

    for _ in range(2):  # the first request reads the environment, the second reuses it
        expected = requests.Session().merge_environment_settings(url, {}, None, None, None)
        assert expected == once.merge_environment_settings(url, {}, None, None, None)
