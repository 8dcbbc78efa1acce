"""WebhookSender against a real HTTP receiver on 127.0.0.1: alerts, heartbeats, failures.

The receiver records what it is sent; it can answer an error status or hold its answer
past the sender's timeout (the unkind cases: monitoring must never stop the loader).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from plowline_cloud.metrics import MetricsRegistry
from plowline_cloud.webhook import WebhookSender
from plowline_core.webhook import ALERT_SCHEMA, HEARTBEAT_SCHEMA, WebhookSettings
from support.timing import wait_for


@dataclass
class Receiver:
    """A local webhook endpoint: what it got (``posted`` is notified on each), how it answers."""

    url: str = ""
    status: int = 200
    delay_s: float = 0.0
    got: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    posted: threading.Condition = field(default_factory=threading.Condition)

    def wait_for(self, test: Callable[[list[dict[str, Any]]], bool], timeout_s: float = 10) -> bool:
        """Return whether ``test`` held for the payloads received within ``timeout_s``."""
        return wait_for(lambda: test([p for _, p in self.got]), timeout_s, wake=self.posted)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    """A webhook receiver on 127.0.0.1, stopped after the test."""
    state = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            with state.posted:
                state.got.append((self.headers["Content-Type"], json.loads(body)))
                state.posted.notify_all()
            time.sleep(state.delay_s)
            self.send_response(state.status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    yield state
    server.shutdown()
    server.server_close()


def _posts(registry: MetricsRegistry) -> dict[tuple[str, str], float]:
    counts = {}
    for metric in registry.registry.collect():
        for sample in metric.samples:
            if sample.name == "plowline_loader_webhook_posts_total":
                counts[(sample.labels["kind"], sample.labels["result"])] = sample.value
    return counts


def _sender(
    url: str,
    healthy: Callable[[], bool],
    registry: MetricsRegistry,
    heartbeat_s: float = 0.2,
    timeout_s: float = 5.0,
) -> WebhookSender:
    settings = WebhookSettings(url, {"pipeline": "test"}, heartbeat_s)
    return WebhookSender(settings, "plowline-loader", "9.9.9", healthy, registry, timeout_s)


def test_receiver_gets_an_alert_and_heartbeats(receiver: Receiver) -> None:
    """The endpoint receives the alert, then a heartbeat every interval, as JSON."""
    registry = MetricsRegistry("loader")
    sender = _sender(receiver.url, lambda: True, registry)
    sender.start()
    sender.alert("the events table does not exist: Not found: Table p:d.events")
    receiver.wait_for(lambda got: sum(p["schema"] == HEARTBEAT_SCHEMA for p in got) >= 2)
    sender.stop()
    alerts = [p["data"] for _, p in receiver.got if p["schema"] == ALERT_SCHEMA]
    expected = (
        [
            {
                "appName": "plowline-loader",
                "appVersion": "9.9.9",
                "message": "the events table does not exist: Not found: Table p:d.events",
                "tags": {"pipeline": "test"},
            }
        ],
        {"application/json"},
        True,
    )
    assert expected == (
        alerts,
        {content_type for content_type, _ in receiver.got},
        _posts(registry)[("heartbeat", "sent")] >= 2,
    )


def test_no_heartbeat_while_unhealthy(receiver: Receiver) -> None:
    """Heartbeats stop while the loader is not healthy and resume when it is."""
    healthy = threading.Event()
    sender = _sender(receiver.url, healthy.is_set, MetricsRegistry("loader"), heartbeat_s=0.1)
    sender.start()
    time.sleep(0.5)
    silent = len(receiver.got)
    healthy.set()
    receiver.wait_for(lambda got: len(got) >= 1)
    sender.stop()
    expected = (0, True)
    assert expected == (silent, len(receiver.got) >= 1)


def test_same_alert_is_sent_once_until_cleared(receiver: Receiver) -> None:
    """A setup error met on every retry alerts once; after ``clear`` it alerts again."""
    sender = _sender(receiver.url, lambda: False, MetricsRegistry("loader"), heartbeat_s=3600)
    sender.start()
    queued = [sender.alert("no access"), sender.alert("no access")]
    sender.clear()
    queued.append(sender.alert("no access"))
    receiver.wait_for(lambda got: len(got) >= 2)
    sender.stop()
    expected = ([True, False, True], 2)
    assert expected == (queued, len(receiver.got))


@pytest.mark.parametrize(
    ("status", "delay_s"),
    [
        pytest.param(500, 0.0, id="server-error"),
        pytest.param(200, 2.0, id="answer-after-the-timeout"),
    ],
)
def test_a_failing_endpoint_is_counted_never_raised_nor_waited_on(
    receiver: Receiver, status: int, delay_s: float
) -> None:
    """An error answer or a timeout is counted as failed; alert() returns at once regardless."""
    receiver.status, receiver.delay_s = status, delay_s
    registry = MetricsRegistry("loader")
    sender = _sender(receiver.url, lambda: False, registry, heartbeat_s=3600, timeout_s=0.5)
    sender.start()
    started = time.monotonic()
    sender.alert("first")
    sender.alert("second")
    queued_in = time.monotonic() - started
    wait_for(lambda: _posts(registry).get(("alert", "failed"), 0) >= 2, 10)
    sender.stop()
    expected = (True, 2.0)
    assert expected == (queued_in < 0.1, _posts(registry)[("alert", "failed")])


def test_an_endpoint_nobody_listens_on_is_counted_as_failed() -> None:
    """A refused connection is one failed post, logged and counted, nothing raised."""
    registry = MetricsRegistry("loader")
    sender = _sender("http://127.0.0.1:9/hook", lambda: False, registry, heartbeat_s=3600)
    sender.start()
    sender.alert("no access")
    wait_for(lambda: _posts(registry), 10)
    sender.stop()
    expected = {("alert", "failed"): 1.0}
    assert expected == _posts(registry)
