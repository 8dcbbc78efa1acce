"""The repeater's ledger check against a BigQuery that accepts connections and never answers.

Found by a chaos run: a repeater SIGKILLed and restarted in exactly-once mode was not ready
240 s later and had logged nothing, its start-up waiting without a deadline on the
ledger's check (``tables.insert`` with no request timeout) while the BigQuery stand-in
did not answer. Here the check alone, in this process, against ``silent_endpoint``
(``support.endpoints``), must give up within its deadline; the repeater's start-up as a
process is tested in ``tests/e2e/repeater/test_repeater_startup.py``.
"""

from __future__ import annotations

import threading
import time

from plowline_cloud.clients import bigquery_client
from plowline_cloud.write_api_pending import ensure_ledger
from plowline_core.errors import TransientError


def test_an_unanswered_ledger_check_fails_within_its_deadline(silent_endpoint: str) -> None:
    """ensure_ledger against a BigQuery that never answers raises a TransientError in time."""
    client = bigquery_client("plowline-local", f"http://{silent_endpoint}")
    outcome: list[BaseException | None] = []

    def check() -> None:
        try:
            ensure_ledger(client, "plowline-local.snowplow.events_ledger", deadline=1.5)
            outcome.append(None)
        except BaseException as error:
            outcome.append(error)

    began = time.monotonic()
    thread = threading.Thread(target=check, daemon=True)
    thread.start()
    thread.join(15.0)
    took = time.monotonic() - began
    [error] = outcome or [None]
    expected = (True, True, True)
    actual = (
        isinstance(error, TransientError),
        "create ledger events_ledger" in str(error),
        took < 5.0,
    )
    assert expected == actual, f"{error!r} after {took:.1f} s"
