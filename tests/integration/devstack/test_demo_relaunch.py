"""A demo or chaos restart starts a service again when it gives up during its start, as Kubernetes would.

The service here is a small script on a loopback port: it exits with a given code on its
first starts, then answers ``/readyz``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from plowline_devstack.demo.services import ServiceError, ServiceSpec, launch_ready
from plowline_devstack.stack.servers import free_port

_SCRIPT = """#!{python}
import http.server, pathlib, sys
state = pathlib.Path({state!r})
starts = int(state.read_text()) if state.exists() else 0
state.write_text(str(starts + 1))
if starts < {give_ups}:
    print("did not start: create ledger events_ledger (within 1 s): timed out", flush=True)
    sys.exit({code})

class Ready(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"ready")

port = int(sys.argv[sys.argv.index("--port") + 1])
http.server.HTTPServer(("127.0.0.1", port), Ready).serve_forever()
"""


def _service(tmp_path: Path, give_ups: int, code: int) -> tuple[ServiceSpec, Path]:
    state = tmp_path / "starts"
    script = tmp_path / "fake-service"
    script.write_text(
        _SCRIPT.format(python=sys.executable, state=str(state), give_ups=give_ups, code=code)
    )
    script.chmod(0o755)
    port = free_port()
    return ServiceSpec("fake", str(script), ("--port", str(port)), port), state


def test_a_service_that_gives_up_twice_is_ready_on_its_third_start(tmp_path: Path) -> None:
    """Exit 1 twice during the start, then ready: launch_ready returns the third process."""
    spec, state = _service(tmp_path, give_ups=2, code=1)
    seen: list[int] = []
    service = launch_ready(
        spec, {}, tmp_path / "logs", 60.0, launched=lambda s: seen.append(s.process.pid)
    )
    try:
        expected = ("3", 3, True, 2)
        actual = (
            state.read_text(),
            len(seen),
            service.ready(),
            service.log.read_text().count("did not start"),
        )
        assert expected == actual
    finally:
        service.stop(5)


def test_a_service_with_wrong_settings_is_not_started_again(tmp_path: Path) -> None:
    """Exit 2 (usage) during the start fails at once, naming one start."""
    spec, state = _service(tmp_path, give_ups=1, code=2)
    with pytest.raises(ServiceError, match="started 1 time"):
        launch_ready(spec, {}, tmp_path / "logs", 60.0)
    expected = "1"
    assert expected == state.read_text()
