"""The monitoring webhook: 2.x's heartbeat and alert payloads, when they are due, and the sender."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft4Validator
from plowline_core.errors import ConfigError
from plowline_core.iglu.key import SchemaKey
from plowline_core.webhook import Healthy, SetupAlert, WebhookSchedule, alert, heartbeat
from plowline_loader.settings import load_settings
from plowline_loader.webhook import WebhookSender, readiness_status

pytestmark = pytest.mark.unit


def _errors(iglu_central_dir: Path, payload: dict[str, Any]) -> list[str]:
    key = SchemaKey.parse(payload["schema"])
    schema = json.loads((iglu_central_dir / "schemas" / key.to_path()).read_text())
    return [error.message for error in Draft4Validator(schema).iter_errors(payload["data"])]


@pytest.mark.parametrize(
    "payload",
    [
        pytest.param(heartbeat("plowline-loader", "0.1.0", {"env": "prod"}), id="heartbeat"),
        pytest.param(
            alert("plowline-loader", "0.1.0", "table missing " * 1000, {}), id="long-alert"
        ),
    ],
)
def test_payloads_are_valid_against_iglu_central(
    payload: dict[str, Any], iglu_central_dir: Path
) -> None:
    """The heartbeat and an alert (its message cut to 4096 characters) validate."""
    assert _errors(iglu_central_dir, payload) == []


def test_a_status_is_sent_on_change_then_every_heartbeat() -> None:
    """Unknown sends nothing; a new status at once; the same one again after the period."""
    schedule = WebhookSchedule(300.0)
    sent = [
        schedule.due(None, 0.0),
        schedule.due(Healthy(), 1.0),
        schedule.due(Healthy(), 200.0),
        schedule.due(SetupAlert("no access"), 250.0),
        schedule.due(SetupAlert("no access"), 551.0),
    ]
    assert [None, Healthy(), None, SetupAlert("no access"), SetupAlert("no access")] == sent


class _Receiver(BaseHTTPRequestHandler):
    received: list[dict[str, Any]] = []

    def do_POST(self) -> None:
        length = int(self.headers["Content-Length"])
        self.received.append(json.loads(self.rfile.read(length)))
        self.send_response(200)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return


@pytest.fixture
def receiver() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A local HTTP server collecting the JSON bodies POSTed to it."""
    server = HTTPServer(("127.0.0.1", 0), _Receiver)
    _Receiver.received = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/hook", _Receiver.received
    server.shutdown()
    server.server_close()


def test_the_sender_posts_heartbeats_once_the_loader_runs(
    receiver: tuple[str, list[dict[str, Any]]],
) -> None:
    """Before start nothing is posted; once started, a heartbeat with the tags arrives."""
    url, received = receiver
    started = [False]
    sender = WebhookSender(url, "0.1.0", readiness_status(lambda: started[0]), 300.0, {"k": "v"})

    before = sender.tick(0.0)
    started[0] = True
    after = sender.tick(1.0)

    assert (before, after) == (False, True)
    assert [(body["schema"].split("/")[1], body["data"]["tags"]) for body in received] == [
        ("heartbeat", {"k": "v"})
    ]


def test_an_unreachable_webhook_never_raises() -> None:
    """A webhook that cannot be reached is logged; the loader goes on."""
    sender = WebhookSender("http://127.0.0.1:9/hook", "0.1.0", lambda: Healthy(), 300.0)

    assert sender.tick(0.0) is False


def test_webhook_tags_are_name_value_pairs() -> None:
    """``--webhook-tags a=1,b=2`` is a mapping; a tag without ``=`` is refused by name."""
    settings = load_settings({"config": "c", "resolver": "r", "webhook_tags": "a=1, b=2"})

    assert settings.webhook_tag_map() == {"a": "1", "b": "2"}
    with pytest.raises(ConfigError, match="--webhook-tags"):
        load_settings({"config": "c", "resolver": "r", "webhook_tags": "oops"})
