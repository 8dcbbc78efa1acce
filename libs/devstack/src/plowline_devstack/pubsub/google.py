"""Google's own Pub/Sub emulator, started as a process: the second opinion on ours.

Our emulator is what every tier runs on, and it is ours: a behaviour it gets wrong is one no
test can see. Google's (the Cloud SDK's ``cloud-pubsub-emulator``, Debian package
``google-cloud-cli-pubsub-emulator``; it runs on Java) is the reference the differential tests
compare ours with (``tests/integration/devstack/test_pubsub_emulator.py`` runs against both).

Notes:
    Google's emulator is not the real service either: where it departs from Pub/Sub's
    documented behaviour (publish limits, for one), the tests write the difference down as
    Google's, with its reason, instead of bending ours to it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from plowline_devstack.pubsub.server import wait_until_ready

SDK_LAUNCHER = Path("/usr/lib/google-cloud-sdk/platform/pubsub-emulator/bin/cloud-pubsub-emulator")
"""Where Debian's ``google-cloud-cli-pubsub-emulator`` puts the launcher."""

HOW_TO_GET = (
    "Google's Pub/Sub emulator is not installed: install the Cloud SDK's emulator "
    "(Debian package google-cloud-cli-pubsub-emulator, or `gcloud components install "
    "pubsub-emulator`), or set PLOWLINE_GOOGLE_PUBSUB_EMULATOR to its launcher."
)


def find_launcher() -> Path | None:
    """Return the launcher of Google's emulator, or None when it is not installed.

    Looked for in ``PLOWLINE_GOOGLE_PUBSUB_EMULATOR``, then on ``PATH``, then where the Debian
    package installs it.
    """
    named = os.environ.get("PLOWLINE_GOOGLE_PUBSUB_EMULATOR")
    candidates = [
        Path(named) if named else None,
        Path(found) if (found := shutil.which("cloud-pubsub-emulator")) else None,
        SDK_LAUNCHER,
    ]
    return next((path for path in candidates if path is not None and path.is_file()), None)


@dataclass
class GooglePubSubEmulator:
    """Run Google's emulator on ``host:port`` until ``stop``; its output goes to ``log``."""

    launcher: Path
    host: str
    port: int
    log: Path
    _process: subprocess.Popen[bytes] | None = field(default=None, init=False, repr=False)

    def start(self, timeout: float = 60.0) -> str:
        """Start the emulator, wait until the official client can use it; return ``host:port``."""
        with self.log.open("ab") as out:
            self._process = subprocess.Popen(
                [str(self.launcher), f"--host={self.host}", f"--port={self.port}"],
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            wait_until_ready(self.host, self.port, timeout=timeout)
        except TimeoutError:
            self.stop()
            tail = self.log.read_text(errors="replace")[-2000:]
            raise TimeoutError(f"Google's Pub/Sub emulator did not start:\n{tail}") from None
        return f"{self.host}:{self.port}"

    def stop(self) -> None:
        """Stop the emulator (its JVM with it)."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
