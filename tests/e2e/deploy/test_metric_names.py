"""The dashboard and the alert rules query only metrics the running services export.

The four services run as real processes against the local stack (the loader on a local
Spark master), each on its own fresh subscription; their /metrics is read once they are
ready, and every ``plowline_*`` name in deploy/monitoring (Grafana JSON, alerts.yaml) must
be among the names exported (read from the ``# TYPE`` declarations by
``support.prometheus.exported_names``, whose own test is in
``tests/integration/deploy/test_metric_names.py``).
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from plowline_cloud.clients import publisher_client, subscriber_client
from support.configs import bigquery_config, resolver_config, write_config_files
from support.prometheus import exported_names
from support.services import Service
from support.timing import wait_until

REPO = Path(__file__).resolve().parents[3]
MONITORING = REPO / "deploy" / "monitoring"
#: The loader wants a registry; with no events it never asks it (nothing listens there).
_UNUSED_REGISTRY = {
    "name": "unused",
    "priority": 0,
    "vendorPrefixes": [],
    "connection": {"http": {"uri": "http://127.0.0.1:9/iglu"}},
}


def _queried() -> set[str]:
    """Return every plowline_* name the dashboard and the alert rules query."""
    dashboard = json.loads((MONITORING / "grafana" / "plowline.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    alerts = yaml.safe_load((MONITORING / "alerts.yaml").read_text())
    exprs += [r["expr"] for g in alerts["groups"] for r in g["rules"]]
    return {name for expr in exprs for name in re.findall(r"\bplowline_[a-z0-9_]+", expr)}


def _fresh_subscription(stack: Any) -> str:
    """Create a topic and a subscription nobody else uses; return the subscription's name."""
    name = f"metrics-{uuid.uuid4().hex[:8]}"
    topic = f"projects/{stack.project}/topics/{name}"
    publisher_client(stack.endpoints.pubsub_target).create_topic(name=topic)
    subscriber = subscriber_client(stack.endpoints.pubsub_target)
    subscriber.create_subscription(
        name=f"projects/{stack.project}/subscriptions/{name}", topic=topic
    )
    subscriber.close()
    return name


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _page(port: int) -> str | None:
    """Return /metrics once /readyz answers 200, else None."""
    try:
        if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code != 200:
            return None
        return httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    except httpx.HTTPError:
        return None


def _config(stack: Any, directory: Path) -> tuple[Path, Path]:
    """A bigquery_config whose input and types subscriptions are this test's own."""
    config = bigquery_config(
        name="metric names",
        project=stack.project,
        dataset=stack.dataset,
        table=stack.table,
        input=_fresh_subscription(stack),
        types_subscription=_fresh_subscription(stack),
        id=str(uuid.uuid4()),
    )
    return write_config_files(
        directory, config, resolver_config(_UNUSED_REGISTRY, cache_size=10, cache_ttl=60)
    )


def test_dashboard_and_alerts_query_only_exported_metrics(
    local_stack: Any,
    tmp_path: Path,
    start_service: Callable[..., Any],
) -> None:
    """Every plowline_* metric the dashboard or an alert queries is on some service's /metrics."""
    config, resolver = _config(local_stack, tmp_path)
    files = ["--config", str(config), "--resolver", str(resolver)]
    ports = {name: _port() for name in ("loader", "mutator", "repeater", "deadletter")}
    services = {
        "loader": start_service(
            "plowline_loader.cli", "run", *files, "--master", "local[1]",
            "--port", str(ports["loader"]),
        ),
        "repeater": start_service(
            "plowline_repeater.cli", "run", *files,
            "--failedInsertsSub", _fresh_subscription(local_stack),
            "--deadEndBucket", "gs://plowline-dead-end/metric-names",
            "--port", str(ports["repeater"]),
        ),
        "deadletter": start_service(
            "plowline_deadletter.cli", "run", "--config", str(config),
            "--badRowsSub", _fresh_subscription(local_stack),
            "--bucket", "gs://plowline-bad-rows/metric-names",
            "--port", str(ports["deadletter"]),
        ),
    }  # fmt: skip
    # plowline_mutator.cli has no __main__ guard: run its console script instead.
    mutator_log = tmp_path / "mutator.log"
    with mutator_log.open("wb") as out:
        mutator = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "plowline-mutator"), "serve", *files,
                "--insecure-no-auth", "--port", str(ports["mutator"]),
            ],
            stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    services["mutator"] = Service(mutator, mutator_log)
    try:
        pages = _pages(ports, services)
    finally:
        mutator.terminate()
        mutator.wait(30)
    exported = set().union(*(exported_names(page) for page in pages.values()))
    expected: set[str] = set()
    assert expected == _queried() - exported


def _pages(ports: dict[str, int], services: dict[str, Service]) -> dict[str, str]:
    """Return each service's /metrics once it is ready; fail with its log if it never is."""
    pages = {}
    for name, port in ports.items():
        process = services[name].process
        pages[name] = wait_until(
            lambda port=port, process=process: _page(port) or process.poll() is not None, 180
        )
        pages[name] = pages[name] if isinstance(pages[name], str) else None
        if not pages[name]:
            pytest.fail(f"{name} never became ready:\n{services[name].tail()}")
    return pages
