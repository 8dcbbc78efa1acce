"""A Snowplow BigQuery Loader 2.x config starts every plowline service on the local stack.

One minimal 2.x Pub/Sub file (our own, naming the local stack's project), passed as 2.x's
command line passes it (``--config … --iglu-config …``, no subcommand). What 2.x has no key
for (types, failed inserts, the dead-letter writer's subscription and bucket) is provisioned
under its derived name, as ``plowline dev up --config`` does; the loader creates 2.x's table.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from google.cloud import bigquery
from plowline_cloud.clients import bigquery_client
from plowline_devstack.stack.config import load_stack
from plowline_devstack.stack.lifecycle import LocalStack
from plowline_devstack.stack.provisioning import provision, provision_pubsub, provision_storage
from plowline_devstack.stack.servers import free_port
from support.configs import embedded, resolver_config, write_json
from support.stack import answers

EXAMPLES = Path(__file__).resolve().parents[3] / "libs/devstack/src/plowline_devstack/examples"
MONEY = ("tr_total", "ti_price_base")
V2_MINIMAL = """
license { accept = true }
input { subscription = "projects/plowline-local/subscriptions/enriched-loader" }
output {
  good { project = "plowline-local", dataset = "snowplow", table = "TABLE" }
  bad { topic = "projects/plowline-local/topics/bad-rows" }
}
monitoring.healthProbe.port = PORT
"""


@pytest.fixture
def v2_files(local_stack: LocalStack, tmp_path: Path) -> Iterator[tuple[Path, Path, str, int]]:
    """A 2.x config on a new table (its Pub/Sub names and buckets provisioned), a resolver."""
    table, port = f"v2_{uuid.uuid4().hex[:8]}", free_port()
    config = tmp_path / "config.hocon"
    config.write_text(V2_MINIMAL.replace("TABLE", table).replace("PORT", str(port)))
    iglu = embedded(EXAMPLES / "iglu", name="examples")
    resolver = write_json(tmp_path / "resolver.json", resolver_config(iglu))
    stack, _ = load_stack(config)
    provision_pubsub(stack, local_stack.endpoints)
    provision_storage(stack, local_stack.endpoints)
    yield config, resolver, table, port
    client = bigquery_client(local_stack.project, local_stack.endpoints.bigquery_url)
    client.delete_table(f"{local_stack.project}.snowplow.{table}", not_found_ok=True)
    client.close()  # type: ignore[no-untyped-call]


def _table(local_stack: LocalStack, name: str) -> bigquery.Table:
    client = bigquery_client(local_stack.project, local_stack.endpoints.bigquery_url)
    try:
        return client.get_table(f"{local_stack.project}.snowplow.{name}")
    finally:
        client.close()  # type: ignore[no-untyped-call]


def _shape(table: bigquery.Table) -> tuple[Any, ...]:
    fields = {field.name: field for field in table.schema}
    return (
        len(table.schema),
        [fields[name].field_type for name in MONEY],
        fields["load_tstamp"].mode,
        (table.time_partitioning.type_, table.time_partitioning.field),
        table.clustering_fields,
    )


V2_SHAPE = (129, ["NUMERIC", "NUMERIC"], "REQUIRED", ("DAY", "load_tstamp"), ["event_name"])


def test_dev_up_makes_2x_table(
    local_stack: LocalStack, v2_files: tuple[Path, Path, str, int]
) -> None:
    """``dev up --config <2.x>`` provisions 2.x's table: money NUMERIC, partitioned, clustered."""
    config, _, table, _ = v2_files
    stack, _ = load_stack(config)

    provision(stack, local_stack.endpoints)

    assert _shape(_table(local_stack, table)) == V2_SHAPE


def test_the_loader_starts_and_creates_2x_table(
    local_stack: LocalStack,
    v2_files: tuple[Path, Path, str, int],
    start_service: Callable[..., Any],
    eventually: Callable[..., Any],
) -> None:
    """2.x's own command line: the loader serves on healthProbe.port and made 2.x's table."""
    clean = 0  # the exit code of a command that did its job
    config, resolver, table, port = v2_files
    loader = start_service(
        "plowline_loader.cli", "--config", str(config), "--iglu-config", str(resolver)
    )

    ready = eventually(lambda: answers(port, "/readyz") or loader.process.poll(), timeout=180)

    assert (ready, loader.process.poll()) == (True, None), loader.tail()
    assert _shape(_table(local_stack, table)) == V2_SHAPE, loader.tail()
    assert clean == loader.stop(), loader.tail()


@pytest.mark.parametrize(
    ("module", "arguments", "variable"),
    [
        pytest.param(
            "plowline_mutator.cli", ["listen"], "PLOWLINE_MUTATOR_PORT", id="mutator-listen"
        ),
        pytest.param("plowline_repeater.cli", [], "PLOWLINE_REPEATER_PORT", id="repeater"),
        pytest.param("plowline_deadletter.cli", [], "PLOWLINE_DEADLETTER_PORT", id="deadletter"),
    ],
)
def test_every_other_service_starts_from_the_2x_config(
    local_stack: LocalStack,
    v2_files: tuple[Path, Path, str, int],
    start_service: Callable[..., Any],
    eventually: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
    module: str,
    arguments: list[str],
    variable: str,
) -> None:
    """Mutator, repeater and dead-letter writer run on the same file, each on its own port."""
    clean = 0  # the exit code of a command that did its job
    config, resolver, _, _ = v2_files
    provision(load_stack(config)[0], local_stack.endpoints)  # the mutator's table
    port = free_port()
    monkeypatch.setenv(variable, str(port))
    service = start_service(
        module, *arguments, "--config", str(config), "--iglu-config", str(resolver)
    )

    def up() -> Any:
        return answers(port, "/readyz") or service.process.poll()

    started = eventually(up, timeout=60)

    assert (started, service.process.poll()) == (True, None), service.tail()
    assert clean == service.stop(), service.tail()


def test_mutator_create_makes_2x_table(
    local_stack: LocalStack, v2_files: tuple[Path, Path, str, int]
) -> None:
    """``plowline-mutator create --config <2.x>`` makes the table 2.x makes."""
    config, _, table, _ = v2_files

    created = subprocess.run(
        [sys.executable, "-m", "plowline_mutator.cli", "create", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=120,
        env=os.environ,
    )

    assert created.returncode == 0, created.stderr
    assert _shape(_table(local_stack, table)) == V2_SHAPE
