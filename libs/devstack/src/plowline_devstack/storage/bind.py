"""A storage server whose port is taken exits, as the other stand-ins do.

gcp-storage-emulator binds its port in a thread and waits for that thread to say it runs;
when the bind fails the thread dies with ``OSError`` and the main thread waits for ever.
The process stays alive and never answers, so a launcher cannot tell a taken port from a
slow start. This correction ends the process with exit code 1 and the port named on
stderr, like the Pub/Sub and BigQuery stand-ins.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from gcp_storage_emulator import server as emulator_server

EXIT_PORT_TAKEN = 1


def install() -> None:
    """Make a failed bind of the API thread end the process (idempotent)."""
    thread = emulator_server.APIThread
    if getattr(thread.run, "_plowline_bind", False):
        return
    original = thread.run

    def run(self: Any) -> None:
        try:
            original(self)
        except OSError as error:
            address = f"{self._host}:{self._port}"
            print(f"cannot bind the storage emulator to {address}: {error}", file=sys.stderr)
            sys.stderr.flush()
            os._exit(EXIT_PORT_TAKEN)  # the main thread waits on an event no one will set

    run._plowline_bind = True  # type: ignore[attr-defined]
    thread.run = run
