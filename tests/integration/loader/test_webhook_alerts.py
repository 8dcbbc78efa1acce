"""The loader's webhook wiring (run_command._start_webhook) against a receiver on 127.0.0.1.

What the driver's readiness hears (a batch held back by an error, a batch through again)
becomes 2.x's alerts and heartbeats: a setup error alerts once until the loader recovers,
any other error alerts nothing, and heartbeats flow while the loader is ready.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from plowline_cloud.metrics import MetricsRegistry
from plowline_core.webhook import ALERT_SCHEMA, HEARTBEAT_SCHEMA
from plowline_loader.health import Readiness
from plowline_loader.run_command import _start_webhook
from plowline_loader.settings import LoaderSettings
from support.webhook import WebhookReceiver, webhook_receiver

TABLE_MISSING = (
    "Py4JJavaError: An error occurred while calling o77.collect.\n"
    "plowline_core.errors.PermanentError: 404 Not found: Table acme:snowplow.events\n"
    "\tat org.apache.spark.api.python.BasePythonRunner"
)


@pytest.fixture
def received() -> Iterator[WebhookReceiver]:
    """A receiver on 127.0.0.1: its URL and the payloads it got."""
    with webhook_receiver() as receiver:
        yield receiver


def test_setup_error_alerts_once_then_heartbeats_once_recovered(
    received: WebhookReceiver,
) -> None:
    """A missing table met on two retries alerts once (its line, the tags); recovered, heartbeats follow."""
    url, got = received.url, received.got
    settings = LoaderSettings(
        config="c", resolver="r", webhook_endpoint=url, webhook_tags="pipeline=prod",
        webhook_heartbeat=0.2,
    )  # fmt: skip
    readiness = Readiness()
    sender = _start_webhook(settings, MetricsRegistry("loader"), readiness)
    assert sender is not None
    readiness.started()
    readiness.degraded(TABLE_MISSING)
    readiness.degraded(TABLE_MISSING)
    readiness.degraded("RegistryUnavailable: cannot resolve iglu:com.acme/x/jsonschema/1-0-0")
    readiness.recovered()
    received.wait_for(lambda payloads: any(p["schema"] == HEARTBEAT_SCHEMA for p in payloads))
    sender.stop()
    alerts = [(p["data"]["message"], p["data"]["tags"]) for p in got if p["schema"] == ALERT_SCHEMA]
    expected = (
        [
            (
                "the events table does not exist: plowline_core.errors.PermanentError: "
                "404 Not found: Table acme:snowplow.events",
                {"pipeline": "prod"},
            )
        ],
        True,
    )
    assert expected == (alerts, any(p["schema"] == HEARTBEAT_SCHEMA for p in got))


def test_no_endpoint_means_no_sender() -> None:
    """Without --webhook-endpoint nothing is started and readiness has no observer."""
    readiness = Readiness()
    expected = None
    assert expected == _start_webhook(
        LoaderSettings(config="c", resolver="r"), MetricsRegistry("loader"), readiness
    )
