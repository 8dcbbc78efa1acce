"""A webhook endpoint on 127.0.0.1 for the tests of the services' alerts and heartbeats."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from support.timing import wait_for


@dataclass
class WebhookReceiver:
    """A receiver's URL and the payloads it got; ``posted`` is notified on each one."""

    url: str = ""
    got: list[dict[str, Any]] = field(default_factory=list)
    posted: threading.Condition = field(default_factory=threading.Condition)

    def wait_for(self, test: Callable[[list[dict[str, Any]]], bool], timeout_s: float = 10) -> bool:
        """Return whether ``test`` held for the payloads received within ``timeout_s``."""
        return wait_for(lambda: test(list(self.got)), timeout_s, wake=self.posted)


@contextmanager
def webhook_receiver() -> Iterator[WebhookReceiver]:
    """Serve a receiver answering 204 to every POST; yield it (its URL, what it got)."""
    receiver = WebhookReceiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with receiver.posted:
                receiver.got.append(payload)
                receiver.posted.notify_all()
            self.send_response(204)
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}/"
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
